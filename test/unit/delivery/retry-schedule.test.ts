import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRetry, retryDelaySeconds } from '../../../src/delivery/retry-schedule.js';

const DEFAULT = [60, 300, 900, 1800, 3600, 7200, 14400];

describe('retry schedule', () => {
  it('waits per the schedule, the last value repeating', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => retryDelaySeconds(n, DEFAULT)),
      [60, 300, 900, 1800, 3600, 7200, 14400, 14400, 14400],
    );
    assert.equal(retryDelaySeconds(1, [2]), 2);
    assert.equal(retryDelaySeconds(0, [5, 10]), 5);
  });

  it('retries until the maximum queue lifetime, then expires', () => {
    const queuedAt = 1_000_000;
    const day = 86_400_000;
    const plan = (attemptsMade: number, now: number) =>
      planRetry({ attemptsMade, now, queuedAt, schedule: DEFAULT, maxLifetimeSeconds: 3 * 86_400 });
    assert.deepEqual(plan(1, queuedAt + 1000), { kind: 'retry', at: queuedAt + 1000 + 60_000 });
    assert.deepEqual(plan(3, queuedAt + 1000), { kind: 'retry', at: queuedAt + 1000 + 900_000 });
    // The last retry is moved to the deadline rather than past it.
    assert.deepEqual(plan(30, queuedAt + 3 * day - 1000), { kind: 'retry', at: queuedAt + 3 * day });
    assert.deepEqual(plan(31, queuedAt + 3 * day), { kind: 'expire' });
    assert.deepEqual(plan(31, queuedAt + 4 * day), { kind: 'expire' });
  });
});
