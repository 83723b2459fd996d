import { sql, type RawBuilder } from 'kysely';
import type { Dialect } from './infra/dialect.js';

/** Comparisons a segment condition may make (exists/not_exists take no value). */
export const CONDITION_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists', 'not_exists'] as const;
export type ConditionOperator = (typeof CONDITION_OPERATORS)[number];

/**
 * A condition on a contact property, as stored: the property's type is resolved when the
 * condition is saved (its key matched FIELD_NAME then, so it is safe as a JSON path).
 */
export interface PropertyCondition {
  property: string;
  type: 'string' | 'number' | 'boolean' | 'date';
  operator: ConditionOperator;
  value?: string | number | boolean;
}

const SQL_OPERATORS: Record<Exclude<ConditionOperator, 'exists' | 'not_exists'>, string> = {
  eq: '=',
  neq: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
};

/**
 * The property's value in `subscribers.metadata` when it has the condition's type, else NULL:
 * a value of another type (written before the property was declared) never matches, and
 * PostgreSQL never casts text that is not a number.
 */
function typedValue(dialect: Dialect, c: PropertyCondition): RawBuilder<unknown> {
  const column = sql.ref('subscribers.metadata');
  if (dialect === 'postgres') {
    const node = sql`(${column}::json -> ${sql.lit(c.property)})`;
    const text = sql`(${column}::json ->> ${sql.lit(c.property)})`;
    if (c.type === 'number') return sql`(case when json_typeof(${node}) = 'number' then ${text}::double precision end)`;
    if (c.type === 'boolean') return sql`(case when json_typeof(${node}) = 'boolean' then ${text} end)`;
    return sql`(case when json_typeof(${node}) = 'string' then ${text} end)`;
  }
  const path = sql.lit(`$.${c.property}`);
  if (c.type === 'number')
    return sql`(case when json_type(${column}, ${path}) in ('integer', 'real') then json_extract(${column}, ${path}) end)`;
  if (c.type === 'boolean')
    return sql`(case when json_type(${column}, ${path}) in ('true', 'false') then json_type(${column}, ${path}) end)`;
  return sql`(case when json_type(${column}, ${path}) = 'text' then json_extract(${column}, ${path}) end)`;
}

/** Whether a `subscribers` row meets every condition (for a query on that table). */
export function matchesAll(dialect: Dialect, conditions: readonly PropertyCondition[]): RawBuilder<boolean> {
  const parts = conditions.map((c) => {
    const value = typedValue(dialect, c);
    if (c.operator === 'exists') return sql`(${value} is not null)`;
    if (c.operator === 'not_exists') return sql`(${value} is null)`;
    const operand = c.type === 'boolean' ? String(c.value) : c.value;
    return sql`(${value} ${sql.raw(SQL_OPERATORS[c.operator])} ${operand})`;
  });
  return sql<boolean>`(${sql.join(parts, sql` and `)})`;
}
