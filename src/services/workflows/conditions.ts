import { isOneOf } from '../../shared/one-of.js';

/**
 * The rules a condition (or a wait's filter) checks, as a definition states them and as it is
 * validated when saved; the runner evaluates them (workflows/evaluate-rule.ts).
 *
 * Fields are named with a namespace, as in Resend: `contact.<field>` (the contact's record:
 * email, first_name, last_name, unsubscribed, status, tags, and its properties, also as
 * `contact.properties.<name>`), `event.<path>` (the triggering event's payload) and
 * `wait_events.<event name>.<path>` (the payload of an event a wait step received).
 */

type Scalar = string | number | boolean | null;

export type ConditionRule =
  | { type: 'rule'; field: string; operator: 'eq' | 'neq'; value: Scalar }
  | { type: 'rule'; field: string; operator: 'gt' | 'gte' | 'lt' | 'lte'; value: number }
  | { type: 'rule'; field: string; operator: 'contains' | 'starts_with' | 'ends_with'; value: string }
  | { type: 'rule'; field: string; operator: 'exists' | 'is_empty' }
  | { type: 'and'; rules: ConditionRule[] }
  | { type: 'or'; rules: ConditionRule[] };

export const OPERATORS = [
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'contains',
  'starts_with',
  'ends_with',
  'exists',
  'is_empty',
] as const;
export type Operator = (typeof OPERATORS)[number];

const FIELD_NAMESPACES = ['contact', 'event', 'wait_events'] as const;

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks a field name: a known namespace and a non-empty path. Returns an error message or null. */
export function checkFieldName(field: string): string | null {
  const [namespace, ...path] = field.split('.');
  if (!isOneOf(FIELD_NAMESPACES, namespace!) || path.length === 0 || path.some((p) => p === '')) {
    return `"${field}" must name a field as contact.<field>, event.<field> or wait_events.<event>.<field>`;
  }
  return null;
}

/** `{ "var": "event.plan" }`: a value taken from the run when the step executes. */
type VarRef = { var: string };
export const isVarRef = (v: unknown): v is VarRef =>
  isRecord(v) && typeof v.var === 'string' && Object.keys(v).length === 1;
