import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { aggregateStatus } from '../../../src/store/email-status.js';
import type { EmailStatus, QueueStatus } from '../../../src/store/tables.js';

describe('aggregateStatus', () => {
  const cases: Array<[QueueStatus[], EmailStatus, boolean?]> = [
    [['queued'], 'queued'],
    [['queued'], 'scheduled', true],
    [['queued', 'sending'], 'sending'],
    [['delivered', 'deferred'], 'deferred'],
    [['delivered', 'queued'], 'queued'],
    [['held'], 'held'],
    [['held', 'queued'], 'queued'],
    [['held', 'delivered'], 'held'],
    [['held', 'deferred'], 'deferred'],
    [['delivered', 'bounced'], 'delivered'],
    [['bounced', 'suppressed'], 'bounced'],
    [['suppressed'], 'suppressed'],
    [['cancelled', 'cancelled'], 'cancelled'],
    [['failed', 'cancelled'], 'failed'],
    [[], 'failed'],
  ];
  for (const [states, expected, scheduled] of cases) {
    it(`${states.join('+') || 'none'} -> ${expected}`, () =>
      assert.equal(aggregateStatus(states, scheduled), expected));
  }
});
