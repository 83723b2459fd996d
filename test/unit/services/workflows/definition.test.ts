import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MAX_RULE_DEPTH,
  MAX_RULES,
  nextStepKey,
  parseDefinition,
} from '../../../../src/services/workflows/definition.js';
import { isAppError } from '../../../../src/shared/errors.js';

const trigger = { key: 'start', type: 'trigger', config: { event_name: 'user.created' } };
const send = (key: string) => ({ key, type: 'send_email', config: { template: { id: 't1' } } });
const delay = (key: string) => ({ key, type: 'delay', config: { duration: '1 hour' } });
const wait = (key: string, timeout?: string) => ({
  key,
  type: 'wait_for_event',
  config: { event_name: 'paid', ...(timeout ? { timeout } : {}) },
});
const branch = (key: string) => ({
  key,
  type: 'condition',
  config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' },
});
const link = (from: string, to: string, type?: string) => ({ from, to, ...(type ? { type } : {}) });

const refused = (steps: unknown[], connections: unknown[], field: string, message?: RegExp) =>
  assert.throws(
    () => parseDefinition({ steps, connections }),
    (err: unknown) => isAppError(err) && err.field === field && (!message || message.test(err.message)),
    `${field} ${message ?? ''}`,
  );

describe('workflow definitions', () => {
  it('parses a graph and follows its connections (a wait’s default is its event_received)', () => {
    const d = parseDefinition({
      steps: [
        trigger,
        branch('b'),
        send('pro'),
        wait('w', '1 day'),
        send('late'),
        { key: 'bye', type: 'contact_delete' },
      ],
      connections: [
        link('start', 'b'),
        link('b', 'pro', 'condition_met'),
        link('b', 'w', 'condition_not_met'),
        link('w', 'late', 'timeout'),
        link('w', 'bye'),
      ],
    });
    assert.equal(d.connections[0]!.type, 'default');
    assert.deepEqual(d.steps[5]!.config, {}, 'a step without settings may leave config out');
    assert.equal(nextStepKey(d, 'start', 'default'), 'b');
    assert.equal(nextStepKey(d, 'b', 'condition_met'), 'pro');
    assert.equal(nextStepKey(d, 'b', 'condition_not_met'), 'w');
    assert.equal(nextStepKey(d, 'w', 'event_received'), 'bye');
    assert.equal(nextStepKey(d, 'w', 'timeout'), 'late');
    assert.equal(nextStepKey(d, 'pro', 'default'), undefined, 'the end of the run');
  });

  it('one trigger, unique keys, connections between existing steps', () => {
    refused([send('a')], [], 'steps', /needs one trigger/);
    refused([trigger, { ...trigger, key: 't2' }], [], 'steps', /2 trigger steps/);
    refused([trigger, send('a'), send('a')], [link('start', 'a')], 'steps[2].key', /used by another step/);
    refused([trigger, send('a')], [link('start', 'b')], 'connections[0].to', /no step "b"/);
    refused([trigger, send('a')], [link('x', 'a')], 'connections[0].from', /no step "x"/);
    refused(
      [trigger, send('a')],
      [link('start', 'a'), link('a', 'start')],
      'connections[1].to',
      /nothing connects into it/,
    );
    refused([trigger, send('a'), send('b')], [link('start', 'a')], 'steps[2]', /cannot be reached/);
    refused([], [], 'steps', /at least the trigger/);
  });

  it('connection types fit their step, one of each per step', () => {
    refused(
      [trigger, send('a')],
      [link('start', 'a', 'condition_met')],
      'connections[0].type',
      /trigger step's connections are default/,
    );
    refused(
      [trigger, branch('b'), send('a')],
      [link('start', 'b'), link('b', 'a')],
      'connections[1].type',
      /condition_met or condition_not_met/,
    );
    refused(
      [trigger, send('a'), send('b')],
      [link('start', 'a'), link('start', 'b')],
      'connections[1]',
      /already has a default connection/,
    );
    refused(
      [trigger, wait('w'), send('a')],
      [link('start', 'w'), link('w', 'a', 'timeout')],
      'connections[1].type',
      /no timeout/,
    );
    refused(
      [trigger, wait('w', '1 day'), send('a'), send('b')],
      [link('start', 'w'), link('w', 'a'), link('w', 'b', 'event_received')],
      'connections[2]',
      /already has/,
    );
    refused([trigger, send('a')], [link('start', 'a', 'sideways')], 'connections[0].type', /must be one of/);
  });

  it('loops must pass through a delay or a wait', () => {
    refused(
      [trigger, send('a'), send('b')],
      [link('start', 'a'), link('a', 'b'), link('b', 'a')],
      'connections',
      /loop a -> b -> a/,
    );
    refused(
      [trigger, branch('c')],
      [link('start', 'c'), link('c', 'c', 'condition_not_met')],
      'connections',
      /loop c -> c/,
    );
    parseDefinition({
      steps: [trigger, send('a'), delay('d')],
      connections: [link('start', 'a'), link('a', 'd'), link('d', 'a')],
    });
    parseDefinition({
      steps: [trigger, wait('w', '1 day'), send('a')],
      connections: [link('start', 'w'), link('w', 'a', 'timeout'), link('a', 'w')],
    });
  });

  it('checks each step’s config', () => {
    refused(
      [trigger, { key: 'd', type: 'delay', config: { duration: 'a while' } }],
      [link('start', 'd')],
      'steps[1].config.duration',
    );
    refused(
      [trigger, { key: 'd', type: 'delay', config: { duration: '1 hour', extra: 1 } }],
      [link('start', 'd')],
      'steps[1].config',
    );
    refused([{ ...trigger, config: { event_name: 'has space' } }], [], 'steps[0].config.event_name');
    refused(
      [trigger, { key: 'u', type: 'contact_update', config: {} }],
      [link('start', 'u')],
      'steps[1].config',
      /changes nothing/,
    );
    refused(
      [trigger, { key: 'u', type: 'contact_update', config: { first_name: { var: 'plan' } } }],
      [link('start', 'u')],
      'steps[1].config.first_name.var',
    );
    refused(
      [trigger, { ...send('s'), config: { template: { id: 't', variables: { x: { var: 'order.id' } } } } }],
      [link('start', 's')],
      'steps[1].config.template.variables.x.var',
    );
    refused(
      [trigger, { ...send('s'), config: { template: { id: 't' }, topic_id: 'tp' } }],
      [link('start', 's')],
      'steps[1].config.topic_id',
      /not supported/,
    );
    refused([trigger, { key: 'x', type: 'teleport', config: {} }], [], 'steps[1].type');
    refused([trigger, { key: 'bad key!', type: 'delay', config: { duration: '1 hour' } }], [], 'steps[1].key');
  });

  it('condition rules: operators with the values they need, a bounded size and depth', () => {
    const cond = (config: unknown) => [trigger, { key: 'c', type: 'condition', config }];
    const edge = [link('start', 'c')];
    refused(
      cond({ type: 'rule', field: 'event.n', operator: 'gt', value: '3' }),
      edge,
      'steps[1].config.value',
      /number/,
    );
    refused(
      cond({ type: 'rule', field: 'event.n', operator: 'contains', value: 3 }),
      edge,
      'steps[1].config.value',
      /string/,
    );
    refused(
      cond({ type: 'rule', field: 'event.n', operator: 'exists', value: 3 }),
      edge,
      'steps[1].config.value',
      /not used/,
    );
    refused(cond({ type: 'rule', field: 'event.n', operator: 'like', value: 3 }), edge, 'steps[1].config.operator');
    refused(cond({ type: 'rule', field: 'n', operator: 'eq', value: 3 }), edge, 'steps[1].config.field');
    refused(cond({ type: 'and', rules: [] }), edge, 'steps[1].config.rules');
    refused(cond({ type: 'xor', rules: [] }), edge, 'steps[1].config.type');
    refused(cond({ type: 'rule', field: 'event.n', operator: 'eq', value: { a: 1 } }), edge, 'steps[1].config.value');
    const leaf = { type: 'rule', field: 'event.n', operator: 'eq', value: 1 };
    parseDefinition({ steps: cond({ type: 'or', rules: Array(MAX_RULES - 1).fill(leaf) }), connections: edge });
    refused(
      cond({ type: 'or', rules: Array(MAX_RULES).fill(leaf) }),
      edge,
      `steps[1].config.rules[${MAX_RULES - 1}]`,
      /at most/,
    );
    const nest = (depth: number): unknown => (depth === 0 ? leaf : { type: 'and', rules: [nest(depth - 1)] });
    parseDefinition({ steps: cond(nest(MAX_RULE_DEPTH)), connections: edge });
    assert.throws(() => parseDefinition({ steps: cond(nest(MAX_RULE_DEPTH + 1)), connections: edge }), /nest at most/);
    // A wait's filter is a rule too.
    refused(
      [
        trigger,
        {
          ...wait('w'),
          config: { event_name: 'paid', filter_rule: { type: 'rule', field: 'amount', operator: 'gt', value: 0 } },
        },
      ],
      [link('start', 'w')],
      'steps[1].config.filter_rule.field',
    );
  });
});
