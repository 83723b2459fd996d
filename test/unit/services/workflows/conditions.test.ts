import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkFieldName, type ConditionRule } from '../../../../src/services/workflows/conditions.js';
import { evaluateRule, resolveField, resolveVars, type RunContext } from '../../../../src/workflows/evaluate-rule.js';

const context: RunContext = {
  contact: {
    id: 'c1',
    email: 'ada@example.org',
    first_name: 'Ada',
    last_name: null,
    status: 'subscribed',
    unsubscribed: false,
    tags: ['beta', 'vip'],
    external_id: null,
    properties: { plan: 'pro', seats: 12, nested: { level: 3 } },
  },
  event: { plan: 'pro', amount: 25, items: [], cart: { total: 99.5 } },
  wait_events: { 'cart.paid': { amount: 10 }, cart: { amount: 1 } },
};

const rule = (field: string, operator: string, value?: unknown): ConditionRule =>
  ({ type: 'rule', field, operator, ...(value === undefined ? {} : { value }) }) as ConditionRule;

describe('workflow conditions', () => {
  it('resolves fields by namespace: contact record and properties, event payload paths, waited events (names with dots)', () => {
    assert.equal(resolveField(context, 'contact.email'), 'ada@example.org');
    assert.equal(resolveField(context, 'contact.plan'), 'pro', 'a property by its own name');
    assert.equal(resolveField(context, 'contact.properties.seats'), 12);
    assert.equal(resolveField(context, 'contact.nested.level'), 3);
    assert.deepEqual(resolveField(context, 'contact.tags'), ['beta', 'vip']);
    assert.equal(resolveField(context, 'event.cart.total'), 99.5);
    assert.equal(resolveField(context, 'event.missing.deep'), undefined);
    assert.equal(resolveField(context, 'wait_events.cart.paid.amount'), 10, 'the longest event name wins');
    assert.equal(resolveField(context, 'wait_events.cart.amount'), 1);
    assert.equal(
      resolveField({ ...context, contact: null }, 'contact.email'),
      undefined,
      'a deleted contact has no fields',
    );
    assert.equal(resolveField(context, 'event.__proto__'), undefined);
  });

  it('every operator, both ways', () => {
    const cases: Array<[ConditionRule, boolean]> = [
      [rule('event.plan', 'eq', 'pro'), true],
      [rule('event.plan', 'eq', 'free'), false],
      [rule('event.plan', 'neq', 'free'), true],
      [rule('event.nothing', 'eq', null), true],
      [rule('event.amount', 'eq', '25'), false],
      [rule('event.amount', 'gt', 24), true],
      [rule('event.amount', 'gt', 25), false],
      [rule('event.amount', 'gte', 25), true],
      [rule('event.amount', 'lt', 25), false],
      [rule('event.amount', 'lte', 25), true],
      [rule('event.plan', 'gt', 1), false],
      [rule('contact.email', 'contains', '@example'), true],
      [rule('contact.email', 'starts_with', 'ada@'), true],
      [rule('contact.email', 'ends_with', '.com'), false],
      [rule('contact.tags', 'contains', 'vip'), true],
      [rule('contact.tags', 'contains', 'vi'), false],
      [rule('contact.first_name', 'exists'), true],
      [rule('contact.last_name', 'exists'), false],
      [rule('contact.last_name', 'is_empty'), true],
      [rule('event.items', 'is_empty'), true],
      [rule('event.plan', 'is_empty'), false],
      [rule('contact.unsubscribed', 'eq', false), true],
    ];
    for (const [r, expected] of cases) assert.equal(evaluateRule(r, context), expected, JSON.stringify(r));
  });

  it('and/or groups', () => {
    const yes = rule('event.plan', 'eq', 'pro');
    const no = rule('event.plan', 'eq', 'free');
    assert.equal(evaluateRule({ type: 'and', rules: [yes, yes] }, context), true);
    assert.equal(evaluateRule({ type: 'and', rules: [yes, no] }, context), false);
    assert.equal(evaluateRule({ type: 'or', rules: [no, yes] }, context), true);
    assert.equal(evaluateRule({ type: 'or', rules: [no, { type: 'and', rules: [no, yes] }] }, context), false);
  });

  it('resolves {var} references anywhere in a value; absent fields are null', () => {
    assert.deepEqual(
      resolveVars(
        { a: { var: 'event.plan' }, b: 'static', c: [{ var: 'contact.seats' }, 1], d: { var: 'event.nope' } },
        context,
      ),
      {
        a: 'pro',
        b: 'static',
        c: [12, 1],
        d: null,
      },
    );
  });

  it('field names need a namespace and a path', () => {
    assert.equal(checkFieldName('event.plan'), null);
    assert.equal(checkFieldName('wait_events.cart.paid.amount'), null);
    assert.match(checkFieldName('plan')!, /contact/);
    assert.match(checkFieldName('event.')!, /contact/);
    assert.match(checkFieldName('order.total')!, /contact/);
  });
});
