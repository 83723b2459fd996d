import { validationError } from './errors.js';
import { isOneOf } from './one-of.js';

/**
 * Typed fields: the types Resend's event schemas and contact properties declare (string,
 * number, boolean, date), and the checks of values against them. A date is an ISO 8601 date
 * or date and time. Pure.
 */

export const FIELD_TYPES = ['string', 'number', 'boolean', 'date'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export type FieldSchema = Record<string, FieldType>;

const MAX_SCHEMA_FIELDS = 50;
export const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

export const isFieldType = (value: unknown): value is FieldType =>
  typeof value === 'string' && isOneOf(FIELD_TYPES, value);

/** Whether `value` is of `type` (null is no value of any type). */
export function valueMatches(type: FieldType, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'date':
      return typeof value === 'string' && ISO_DATE.test(value) && !Number.isNaN(Date.parse(value));
  }
}

/** A schema as given in a request: null, or an object of at most 50 field names to types. */
export function parseSchema(field: string, value: unknown): FieldSchema | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw validationError(field, `must be an object of field names to types (${FIELD_TYPES.join(', ')}), or null`);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_SCHEMA_FIELDS)
    throw validationError(field, `may declare at most ${MAX_SCHEMA_FIELDS} fields`);
  for (const [name, type] of entries) {
    if (!FIELD_NAME.test(name))
      throw validationError(
        `${field}.${name}`,
        'must be a field name: a letter or _ then letters, digits or _, at most 64',
      );
    if (!isFieldType(type)) throw validationError(`${field}.${name}`, `must be one of ${FIELD_TYPES.join(', ')}`);
  }
  return Object.fromEntries(entries) as FieldSchema;
}

/** Throws a validation error naming the first field of `values` whose value is not of its declared type (undeclared fields pass). */
export function checkTypedValues(field: string, schema: FieldSchema, values: Record<string, unknown>): void {
  for (const [name, type] of Object.entries(schema)) {
    if (!(name in values) || values[name] === null) continue;
    if (!valueMatches(type, values[name]))
      throw validationError(`${field}.${name}`, `must be a ${type}${type === 'date' ? ' (ISO 8601)' : ''}`);
  }
}
