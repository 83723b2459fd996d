import { isRecord, isVarRef, type ConditionRule, type Operator } from '../services/workflows/conditions.js';

/**
 * What a step can read about its run, and rules evaluated against it. Pure functions: the
 * runner builds the context, these only read it.
 */

/** The contact as steps see it; null once it was deleted. */
export interface ContactFields {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  status: string;
  unsubscribed: boolean;
  tags: string[];
  external_id: string | null;
  properties: Record<string, unknown>;
}

export interface RunContext {
  contact: ContactFields | null;
  /** The triggering event's payload. */
  event: Record<string, unknown>;
  /** Payloads of events received by wait steps, by event name. */
  wait_events: Record<string, unknown>;
}

function walk(value: unknown, path: string[]): unknown {
  let current = value;
  for (const part of path) {
    if (!isRecord(current) || !Object.hasOwn(current, part)) return undefined;
    current = current[part];
  }
  return current;
}

/** The value a field names; undefined when it is absent. */
export function resolveField(context: RunContext, field: string): unknown {
  const [namespace, ...path] = field.split('.');
  if (namespace === 'event') return walk(context.event, path);
  if (namespace === 'wait_events') {
    // Event names may hold dots (`cart.paid`): the longest name the path starts with wins.
    const joined = path.join('.');
    const name = Object.keys(context.wait_events)
      .filter((n) => joined === n || joined.startsWith(`${n}.`))
      .sort((a, b) => b.length - a.length)[0];
    if (name === undefined) return undefined;
    const rest = joined.slice(name.length + 1);
    return walk(context.wait_events[name], rest === '' ? [] : rest.split('.'));
  }
  if (namespace !== 'contact' || !context.contact) return undefined;
  const contact = context.contact;
  const [first, ...rest] = path;
  if (first === undefined) return undefined;
  if (Object.hasOwn(contact, first) && first !== 'properties')
    return walk(Reflect.get(contact, first) as unknown, rest);
  if (first === 'properties') return walk(contact.properties, rest);
  // A property by its own name, as `contact.plan`.
  return walk(contact.properties, path);
}

const isEmpty = (v: unknown): boolean =>
  v === undefined ||
  v === null ||
  v === '' ||
  (Array.isArray(v) && v.length === 0) ||
  (isRecord(v) && Object.keys(v).length === 0);

/** One operator on one value. Comparisons of mismatched types are false, never an error. */
function test(actual: unknown, operator: Operator, expected: unknown): boolean {
  switch (operator) {
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'is_empty':
      return isEmpty(actual);
    case 'eq':
      return Array.isArray(actual) ? false : (actual ?? null) === expected;
    case 'neq':
      return !test(actual, 'eq', expected);
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      if (typeof actual !== 'number' || typeof expected !== 'number') return false;
      return operator === 'gt'
        ? actual > expected
        : operator === 'gte'
          ? actual >= expected
          : operator === 'lt'
            ? actual < expected
            : actual <= expected;
    }
    case 'contains':
      if (Array.isArray(actual)) return actual.some((item) => item === expected);
      return typeof actual === 'string' && typeof expected === 'string' && actual.includes(expected);
    case 'starts_with':
      return typeof actual === 'string' && typeof expected === 'string' && actual.startsWith(expected);
    case 'ends_with':
      return typeof actual === 'string' && typeof expected === 'string' && actual.endsWith(expected);
  }
}

export function evaluateRule(rule: ConditionRule, context: RunContext): boolean {
  if (rule.type === 'and') return rule.rules.every((r) => evaluateRule(r, context));
  if (rule.type === 'or') return rule.rules.some((r) => evaluateRule(r, context));
  return test(resolveField(context, rule.field), rule.operator, 'value' in rule ? rule.value : undefined);
}

/** Replaces every `{var}` reference in a value (objects and arrays included) with what it names; absent fields become null. */
export function resolveVars(value: unknown, context: RunContext): unknown {
  if (isVarRef(value)) return resolveField(context, value.var) ?? null;
  if (Array.isArray(value)) return value.map((v) => resolveVars(v, context));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveVars(v, context)]));
  return value;
}
