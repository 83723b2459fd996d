import { z } from 'zod';
import { validationError } from '../../shared/errors.js';
import { checkFieldName, isVarRef, OPERATORS, type ConditionRule } from './conditions.js';
import { parseDuration } from '../../shared/duration.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * A workflow's definition, in Resend's automation shape: steps (each with a key, a type and
 * its config) joined by connections. This module parses and checks it without I/O: shape,
 * one trigger, connections between existing steps with the types their step allows, every
 * step reachable, and no loop that could spin without waiting. References to templates and
 * segments are checked by the service, which can read them.
 */

const STEP_TYPES = [
  'trigger',
  'delay',
  'send_email',
  'wait_for_event',
  'condition',
  'contact_update',
  'contact_delete',
  'add_to_segment',
] as const;
type StepType = (typeof STEP_TYPES)[number];
const CONNECTION_TYPES = ['default', 'condition_met', 'condition_not_met', 'timeout', 'event_received'] as const;
export type ConnectionType = (typeof CONNECTION_TYPES)[number];

const MAX_STEPS = 100;
const MAX_CONNECTIONS = 200;
const MAX_KEY_LENGTH = 100;
const MAX_EVENT_NAME_LENGTH = 200;
/** Rules in a condition, counted through its and/or groups, and how deep groups nest. */
export const MAX_RULES = 50;
export const MAX_RULE_DEPTH = 5;

const KEY = /^[A-Za-z0-9_-]+$/;
/** Event names: letters, digits and `. _ - :` (`user.created`, `cart:abandoned`). */
const EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

export const eventNameSchema = z
  .string()
  .max(MAX_EVENT_NAME_LENGTH, `must be at most ${MAX_EVENT_NAME_LENGTH} characters`)
  .regex(EVENT_NAME, 'must be letters, digits and . _ - : (starting with a letter or digit)');

const varRef = z.strictObject({ var: z.string() });
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const variableValue = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  varRef,
  z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  z.array(
    z.union([
      z.string(),
      z.number(),
      z.boolean(),
      z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    ]),
  ),
]);

/**
 * Opens and clicks by machines (Apple's prefetch, scanners) start or resume nothing unless a
 * trigger or wait says `include_machines: true`: a workflow reacts to people by default.
 */
const includeMachines = z.boolean().optional();

const configs = {
  trigger: z.strictObject({ event_name: eventNameSchema, include_machines: includeMachines }),
  delay: z.strictObject({ duration: z.string() }),
  send_email: z.strictObject({
    template: z.strictObject({ id: z.string(), variables: z.record(z.string(), variableValue).optional() }),
    subject: z.string().optional(),
    from: z.string().optional(),
    reply_to: z.string().optional(),
    topic_id: z.string().optional(),
  }),
  wait_for_event: z.strictObject({
    event_name: eventNameSchema,
    timeout: z.string().optional(),
    filter_rule: z.unknown().optional(),
    include_machines: includeMachines,
  }),
  condition: z.looseObject({ type: z.string() }),
  contact_update: z.strictObject({
    first_name: z.union([z.string(), z.null(), varRef]).optional(),
    last_name: z.union([z.string(), z.null(), varRef]).optional(),
    unsubscribed: z.union([z.boolean(), varRef]).optional(),
    properties: z.record(z.string(), z.union([scalar, varRef])).optional(),
  }),
  contact_delete: z.strictObject({}),
  add_to_segment: z.strictObject({ segment_id: z.string() }),
};

const stepSchema = z.discriminatedUnion(
  'type',
  // eslint-disable-next-line no-restricted-syntax -- zod cannot type a discriminated union built from a list; the list is STEP_TYPES, each checked
  STEP_TYPES.map((type) =>
    z.strictObject({
      key: z
        .string()
        .min(1, 'is required')
        .max(MAX_KEY_LENGTH, `must be at most ${MAX_KEY_LENGTH} characters`)
        .regex(KEY, 'must be letters, digits, _ and -'),
      type: z.literal(type),
      // Steps without settings (contact_delete) may leave config out.
      config: type === 'contact_delete' ? configs[type].optional().default({}) : configs[type],
    }),
  ) as unknown as [z.ZodObject, ...z.ZodObject[]],
  { error: `must be one of ${STEP_TYPES.join(', ')}` },
);

const connectionSchema = z.strictObject({
  from: z.string(),
  to: z.string(),
  type: z
    .enum(CONNECTION_TYPES, { error: `must be one of ${CONNECTION_TYPES.join(', ')}` })
    .optional()
    .default('default'),
});

const definitionSchema = z.object({
  steps: z.array(stepSchema).min(1, 'needs at least the trigger step').max(MAX_STEPS, `at most ${MAX_STEPS} steps`),
  connections: z.array(connectionSchema).max(MAX_CONNECTIONS, `at most ${MAX_CONNECTIONS} connections`),
});

type TriggerConfig = z.infer<typeof configs.trigger>;
type DelayConfig = z.infer<typeof configs.delay>;
export type SendEmailConfig = z.infer<typeof configs.send_email>;
type WaitForEventConfig = Omit<z.infer<typeof configs.wait_for_event>, 'filter_rule'> & {
  filter_rule?: ConditionRule | undefined;
};
type ContactUpdateConfig = z.infer<typeof configs.contact_update>;
type AddToSegmentConfig = z.infer<typeof configs.add_to_segment>;

export type Step =
  | { key: string; type: 'trigger'; config: TriggerConfig }
  | { key: string; type: 'delay'; config: DelayConfig }
  | { key: string; type: 'send_email'; config: SendEmailConfig }
  | { key: string; type: 'wait_for_event'; config: WaitForEventConfig }
  | { key: string; type: 'condition'; config: ConditionRule }
  | { key: string; type: 'contact_update'; config: ContactUpdateConfig }
  | { key: string; type: 'contact_delete'; config: Record<string, never> }
  | { key: string; type: 'add_to_segment'; config: AddToSegmentConfig };

interface Connection {
  from: string;
  to: string;
  type: ConnectionType;
}

export interface Definition {
  steps: Step[];
  connections: Connection[];
}

/** A saved version's definition as the store keeps it; it was checked by parseDefinition when saved. */
export const definitionOf = (version: { definition: unknown }): Definition => version.definition as Definition;

/** Which connection types leave each step type. */
const OUTGOING: Record<StepType, readonly ConnectionType[]> = {
  trigger: ['default'],
  delay: ['default'],
  send_email: ['default'],
  contact_update: ['default'],
  contact_delete: ['default'],
  add_to_segment: ['default'],
  condition: ['condition_met', 'condition_not_met'],
  wait_for_event: ['event_received', 'default', 'timeout'],
};

/** Steps that hold a run until a time or an event: a loop must pass through one. */
const WAITS: ReadonlySet<StepType> = new Set(['delay', 'wait_for_event']);

/** A condition rule, checked by hand: zod's messages for nested unions say too little. */
function parseRule(value: unknown, field: string, depth: number, count: { n: number }): ConditionRule {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw validationError(field, 'must be a rule object');
  const r = value as Record<string, unknown>;
  if (++count.n > MAX_RULES) throw validationError(field, `a condition holds at most ${MAX_RULES} rules`);
  if (r.type === 'and' || r.type === 'or') {
    if (depth >= MAX_RULE_DEPTH) throw validationError(field, `and/or groups nest at most ${MAX_RULE_DEPTH} deep`);
    const extra = Object.keys(r).find((k) => k !== 'type' && k !== 'rules');
    if (extra) throw validationError(`${field}.${extra}`, 'is not a field of an and/or group');
    if (!Array.isArray(r.rules) || r.rules.length === 0)
      throw validationError(`${field}.rules`, 'must be a non-empty array of rules');
    return { type: r.type, rules: r.rules.map((sub, i) => parseRule(sub, `${field}.rules[${i}]`, depth + 1, count)) };
  }
  if (r.type !== 'rule') throw validationError(`${field}.type`, 'must be rule, and or or');
  const extra = Object.keys(r).find((k) => !['type', 'field', 'operator', 'value'].includes(k));
  if (extra) throw validationError(`${field}.${extra}`, 'is not a field of a rule');
  if (typeof r.field !== 'string') throw validationError(`${field}.field`, 'is required');
  const badName = checkFieldName(r.field);
  if (badName) throw validationError(`${field}.field`, badName);
  const operator = r.operator;
  if (typeof operator !== 'string' || !isOneOf(OPERATORS, operator))
    throw validationError(`${field}.operator`, `must be one of ${OPERATORS.join(', ')}`);
  const v = r.value;
  switch (operator) {
    case 'exists':
    case 'is_empty':
      if (v !== undefined) throw validationError(`${field}.value`, `is not used by ${operator}`);
      return { type: 'rule', field: r.field, operator };
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw validationError(`${field}.value`, `must be a number for ${operator}`);
      return { type: 'rule', field: r.field, operator, value: v };
    case 'contains':
    case 'starts_with':
    case 'ends_with':
      if (typeof v !== 'string') throw validationError(`${field}.value`, `must be a string for ${operator}`);
      return { type: 'rule', field: r.field, operator, value: v };
    default:
      if (!(v === null || ['string', 'number', 'boolean'].includes(typeof v)))
        throw validationError(`${field}.value`, 'must be a string, number, boolean or null');
      return { type: 'rule', field: r.field, operator: operator, value: v as string | number | boolean | null };
  }
}

/** Every `{var}` in a step's config must name a field of a known namespace. */
function checkVars(value: unknown, field: string): void {
  if (isVarRef(value)) {
    const bad = checkFieldName(value.var);
    if (bad) throw validationError(`${field}.var`, bad);
    return;
  }
  if (Array.isArray(value)) value.forEach((v, i) => checkVars(v, `${field}[${i}]`));
  else if (typeof value === 'object' && value !== null)
    for (const [k, v] of Object.entries(value)) checkVars(v, `${field}.${k}`);
}

/**
 * Parses and checks a definition (the `steps` and `connections` of a request); throws a
 * validation error naming the first problem, e.g. `connections[2].to: no step "welcome"`.
 */
export function parseDefinition(input: { steps: unknown; connections: unknown }): Definition {
  const parsed = definitionSchema.safeParse({ steps: input.steps, connections: input.connections ?? [] });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.reduce<string>(
      (out, p) => (typeof p === 'number' ? `${out}[${p}]` : out ? `${out}.${String(p)}` : String(p)),
      '',
    );
    throw validationError(path || 'steps', issue.message.charAt(0).toLowerCase() + issue.message.slice(1));
  }
  const steps: Step[] = parsed.data.steps.map((raw, i) => {
    // eslint-disable-next-line no-restricted-syntax -- the schema checked the step; zod's union built from a list loses its type
    const step = raw as unknown as Step;
    const at = `steps[${i}].config`;
    if (step.type === 'condition') return { ...step, config: parseRule(step.config, at, 0, { n: 0 }) };
    if (step.type === 'wait_for_event') {
      const { filter_rule, ...rest } = step.config;
      if (rest.timeout !== undefined) parseDuration(`${at}.timeout`, rest.timeout);
      return {
        ...step,
        config:
          filter_rule === undefined
            ? rest
            : { ...rest, filter_rule: parseRule(filter_rule, `${at}.filter_rule`, 0, { n: 0 }) },
      };
    }
    if (step.type === 'delay') parseDuration(`${at}.duration`, step.config.duration);
    if (step.type === 'send_email') {
      if (step.config.topic_id !== undefined)
        throw validationError(
          `${at}.topic_id`,
          'topics are not supported by workflows; unsubscribed contacts are skipped at every send',
        );
      checkVars(step.config.template.variables, `${at}.template.variables`);
    }
    if (step.type === 'contact_update') {
      if (Object.keys(step.config).length === 0)
        throw validationError(at, 'changes nothing: give first_name, last_name, unsubscribed or properties');
      checkVars(step.config, at);
    }
    return step;
  });
  const connections = parsed.data.connections as Connection[];
  checkGraph(steps, connections);
  return { steps, connections };
}

function checkGraph(steps: Step[], connections: Connection[]): void {
  const byKey = new Map<string, Step>();
  steps.forEach((s, i) => {
    if (byKey.has(s.key)) throw validationError(`steps[${i}].key`, `"${s.key}" is used by another step`);
    byKey.set(s.key, s);
  });
  const triggers = steps.filter((s) => s.type === 'trigger');
  if (triggers.length !== 1)
    throw validationError(
      'steps',
      triggers.length === 0
        ? 'needs one trigger step'
        : `has ${triggers.length} trigger steps; a workflow has exactly one`,
    );

  const out = new Map<string, string[]>();
  const seen = new Set<string>();
  connections.forEach((c, i) => {
    const from = byKey.get(c.from);
    if (!from) throw validationError(`connections[${i}].from`, `no step "${c.from}"`);
    const to = byKey.get(c.to);
    if (!to) throw validationError(`connections[${i}].to`, `no step "${c.to}"`);
    if (to.type === 'trigger')
      throw validationError(`connections[${i}].to`, 'the trigger starts the workflow; nothing connects into it');
    if (!OUTGOING[from.type].includes(c.type)) {
      throw validationError(
        `connections[${i}].type`,
        `a ${from.type} step's connections are ${OUTGOING[from.type].join(' or ')}, not ${c.type}`,
      );
    }
    if (c.type === 'timeout' && from.type === 'wait_for_event' && from.config.timeout === undefined) {
      throw validationError(`connections[${i}].type`, `step "${c.from}" has no timeout to connect from`);
    }
    // A run follows one path: one connection of each type leaves a step (default and
    // event_received are the same way out of a wait).
    const slot = `${c.from}\u0000${c.type === 'default' && from.type === 'wait_for_event' ? 'event_received' : c.type}`;
    if (seen.has(slot))
      throw validationError(`connections[${i}]`, `step "${c.from}" already has a ${c.type} connection`);
    seen.add(slot);
    out.set(c.from, [...(out.get(c.from) ?? []), c.to]);
  });

  const reachable = new Set<string>([triggers[0]!.key]);
  const todo = [triggers[0]!.key];
  while (todo.length > 0) {
    for (const next of out.get(todo.pop()!) ?? []) {
      if (!reachable.has(next)) {
        todo.push(next);
        reachable.add(next);
      }
    }
  }
  const stray = steps.findIndex((s) => !reachable.has(s.key));
  if (stray >= 0)
    throw validationError(`steps[${stray}]`, `step "${steps[stray]!.key}" cannot be reached from the trigger`);

  // A loop is allowed only through a delay or a wait: among the other steps the graph must be acyclic.
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (key: string, path: string[]): void => {
    if (WAITS.has(byKey.get(key)!.type) || state.get(key) === 'done') return;
    if (state.get(key) === 'visiting') {
      const loop = [...path.slice(path.indexOf(key)), key].join(' -> ');
      throw validationError(
        'connections',
        `the loop ${loop} has no delay or wait_for_event step; a run would never pause`,
      );
    }
    state.set(key, 'visiting');
    for (const next of out.get(key) ?? []) visit(next, [...path, key]);
    state.set(key, 'done');
  };
  for (const s of steps) visit(s.key, []);
}

/** The step a connection of `type` leads to from `from`, if any (a wait's default is its event_received). */
export function nextStepKey(definition: Definition, from: string, type: ConnectionType): string | undefined {
  const match = (c: Connection) =>
    c.from === from && (c.type === type || (type === 'event_received' && c.type === 'default'));
  return definition.connections.find(match)?.to;
}

export const findStep = (definition: Definition, key: string): Step | undefined =>
  definition.steps.find((s) => s.key === key);
export const triggerOf = (definition: Definition): Step & { type: 'trigger' } =>
  definition.steps.find((s) => s.type === 'trigger') as Step & { type: 'trigger' };
