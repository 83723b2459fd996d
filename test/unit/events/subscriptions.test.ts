import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { subscribesTo } from '../../../src/events/subscriptions.js';
import { parseEvents } from '../../../src/services/webhooks/webhooks.js';

describe('webhook subscriptions', () => {
  it('"*" receives every type; a list receives its own', () => {
    assert.equal(subscribesTo(['*'], 'campaign.sent'), true);
    assert.equal(subscribesTo(['email.delivered', 'email.bounced'], 'email.bounced'), true);
    assert.equal(subscribesTo(['email.delivered'], 'email.bounced'), false);
  });

  it('event lists are validated, deduplicated, and "*" absorbs the rest', () => {
    assert.deepEqual(parseEvents(['email.sent', 'email.sent', 'email.opened']), ['email.sent', 'email.opened']);
    assert.deepEqual(parseEvents(['email.sent', '*']), ['*']);
    assert.throws(() => parseEvents([]), { message: /^events: must name at least one/ });
    assert.throws(
      () => parseEvents(['email.sent', 'email.exploded']),
      (err: Error & { field?: string }) => err.field === 'events[1]',
    );
    assert.throws(
      () => parseEvents('email.sent'),
      (err: Error & { field?: string }) => err.field === 'events',
    );
  });
});
