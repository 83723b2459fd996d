import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { endpointHealthAfter, nextAttemptAt, type RetryPolicy } from '../../../src/webhooks/retry-policy.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const policy: RetryPolicy = {
  legacySchedule: [60, 300, 1800],
  schedule: [60, 300, 1800, 7200, 18000],
  maxAgeMs: 5 * DAY,
};
const t0 = 1_700_000_000_000;

describe('retry schedule', () => {
  it('legacy: now, +1 min, +5 min, +30 min, then failed', () => {
    let now = t0;
    const gaps: number[] = [];
    for (let made = 1; made <= 10; made++) {
      const at = nextAttemptAt(policy, 'legacy', made, t0, now);
      if (at === null) break;
      gaps.push(at - now);
      now = at;
    }
    assert.deepEqual(gaps, [MIN, 5 * MIN, 30 * MIN]);
  });

  it('versioned: +1 min, +5 min, +30 min, +2 h, +5 h, then every 5 h until five days', () => {
    let now = t0;
    const gaps: number[] = [];
    for (let made = 1; made <= 100; made++) {
      const at = nextAttemptAt(policy, 'v1', made, t0, now);
      if (at === null) break;
      gaps.push(at - now);
      now = at;
    }
    assert.deepEqual(gaps.slice(0, 7), [MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 5 * HOUR, 5 * HOUR, 5 * HOUR]);
    assert.ok(now - t0 <= 5 * DAY);
    assert.ok(now - t0 > 5 * DAY - 5 * HOUR, 'keeps retrying until the last slot before five days');
  });

  it('versioned: a replay starts a fresh run', () => {
    const replayedAt = t0 + 10 * DAY;
    assert.equal(nextAttemptAt(policy, 'v1', 1, replayedAt, replayedAt), replayedAt + MIN);
    assert.equal(nextAttemptAt(policy, 'v1', 30, t0, replayedAt), null);
  });
});

describe('endpoint health', () => {
  const failed = (statusCode: number | null) => ({ succeeded: false, statusCode });

  it('a success ends the failure streak', () => {
    assert.deepEqual(
      endpointHealthAfter(policy, { surface: 'v1', failing_since: t0 }, { succeeded: true, statusCode: 200 }, t0 + DAY),
      { failingSince: null, disable: null },
    );
  });

  it('the first failure starts the streak; five days of it disable a versioned endpoint', () => {
    assert.deepEqual(endpointHealthAfter(policy, { surface: 'v1', failing_since: null }, failed(500), t0), {
      failingSince: t0,
      disable: null,
    });
    assert.deepEqual(
      endpointHealthAfter(policy, { surface: 'v1', failing_since: t0 }, failed(null), t0 + 5 * DAY - 1),
      { failingSince: t0, disable: null },
    );
    assert.deepEqual(endpointHealthAfter(policy, { surface: 'v1', failing_since: t0 }, failed(null), t0 + 5 * DAY), {
      failingSince: t0,
      disable: 'failing',
    });
  });

  it('410 Gone disables a versioned endpoint at once', () => {
    assert.equal(endpointHealthAfter(policy, { surface: 'v1', failing_since: null }, failed(410), t0).disable, 'gone');
  });

  it('legacy endpoints are never disabled', () => {
    assert.equal(
      endpointHealthAfter(policy, { surface: 'legacy', failing_since: null }, failed(410), t0).disable,
      null,
    );
    assert.equal(
      endpointHealthAfter(policy, { surface: 'legacy', failing_since: t0 }, failed(500), t0 + 30 * DAY).disable,
      null,
    );
  });
});
