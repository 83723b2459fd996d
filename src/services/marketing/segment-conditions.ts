import { validationError } from '../../shared/errors.js';
import { valueMatches, type FieldType } from '../../shared/typed-fields.js';
import { listAllContactProperties } from '../../store/contact-properties.js';
import type { Db } from '../../store/infra/db.js';
import {
  CONDITION_OPERATORS,
  type ConditionOperator,
  type PropertyCondition,
} from '../../store/property-conditions.js';
import { isOneOf } from '../../shared/one-of.js';

const MAX_SEGMENT_CONDITIONS = 20;
const ORDERED: readonly ConditionOperator[] = ['gt', 'gte', 'lt', 'lte'];

/**
 * Checks a segment's conditions (`[{property, operator, value}]`, all must hold) against the
 * workspace's declared contact properties and returns them as stored, with each property's
 * type. An empty list or null removes them.
 */
export async function checkSegmentConditions(
  db: Db,
  workspaceId: string,
  input: unknown,
): Promise<PropertyCondition[] | null> {
  if (input === null || (Array.isArray(input) && input.length === 0)) return null;
  if (!Array.isArray(input)) throw validationError('conditions', 'must be a list of {property, operator, value}');
  if (input.length > MAX_SEGMENT_CONDITIONS)
    throw validationError('conditions', `at most ${MAX_SEGMENT_CONDITIONS} conditions`);
  const declared = new Map((await listAllContactProperties(db, workspaceId)).map((p) => [p.key, p.type as FieldType]));
  return input.map((raw: unknown, i): PropertyCondition => {
    const field = `conditions[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw))
      throw validationError(field, 'must be {property, operator, value}');
    const { property, operator, value } = raw as Record<string, unknown>;
    if (typeof property !== 'string' || !declared.has(property))
      throw validationError(
        `${field}.property`,
        `must name a declared contact property (contactProperties.create)${typeof property === 'string' ? `; ${property} is not one` : ''}`,
      );
    const type = declared.get(property)!;
    if (typeof operator !== 'string' || !isOneOf(CONDITION_OPERATORS, operator))
      throw validationError(`${field}.operator`, `must be one of ${CONDITION_OPERATORS.join(', ')}`);
    const op = operator;
    if (type === 'boolean' && ORDERED.includes(op))
      throw validationError(`${field}.operator`, `${property} is a boolean: eq, neq, exists or not_exists`);
    if (op === 'exists' || op === 'not_exists') {
      if (value !== undefined && value !== null) throw validationError(`${field}.value`, `${op} takes no value`);
      return { property, type, operator: op };
    }
    if (!valueMatches(type, value))
      throw validationError(
        `${field}.value`,
        `must be a ${type}${type === 'date' ? ' (ISO 8601)' : ''}, as ${property} is declared`,
      );
    if (typeof value === 'string' && value.length > 1000)
      throw validationError(`${field}.value`, 'must be at most 1000 characters');
    return { property, type, operator: op, value: value as string | number | boolean };
  });
}
