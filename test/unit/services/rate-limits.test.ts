import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limitFor } from '../../../src/services/rate-limits.js';
import { MemoryRateLimiter, retryAfterSeconds, windowStart } from '../../../src/shared/fixed-window.js';

const starter = { plan: 'starter' as const, transactional_per_second: null, marketing_per_second: null };

describe('rate-limit policy', () => {
  it('follows the SPEC table and plan tiers', () => {
    assert.deepEqual(limitFor('send.transactional', starter), { limit: 5, windowMs: 1000, soft: true });
    assert.deepEqual(limitFor('send.marketing', starter), { limit: 500, windowMs: 1000, soft: false });
    const pro = { ...starter, plan: 'professional' as const };
    assert.equal(limitFor('send.transactional', pro).limit, 50);
    assert.equal(limitFor('send.marketing', pro).limit, 1000);
    const enterprise = { plan: 'enterprise' as const, transactional_per_second: 200, marketing_per_second: 5000 };
    assert.equal(limitFor('send.transactional', enterprise).limit, 200);
    assert.equal(limitFor('send.marketing', enterprise).limit, 5000);
    assert.deepEqual(limitFor('campaigns.send', starter), { limit: 5, windowMs: 60_000, soft: false });
    assert.equal(limitFor('subscribers.write', starter).limit, 100);
    assert.equal(limitFor('subscribers.read', starter).limit, 100);
    assert.deepEqual(limitFor('domains.write', starter), { limit: 10, windowMs: 60_000, soft: false });
    assert.deepEqual(limitFor('domains.read', starter), { limit: 60, windowMs: 60_000, soft: false });
  });
});

describe('MemoryRateLimiter', () => {
  const perMinute = { limit: 3, windowMs: 60_000, soft: false };
  const t0 = 1_800_000_000_000; // a minute boundary

  it('counts within a fixed window and resets at its end', async () => {
    assert.equal(windowStart(t0 + 5, 60_000), t0);
    const rl = new MemoryRateLimiter();
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await rl.hit('k', perMinute, t0 + 1000 * i));
    assert.deepEqual(
      decisions.map((d) => [d.allowed, d.remaining]),
      [
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ],
    );
    assert.equal(decisions[3]!.resetAt, t0 + 60_000);
    assert.equal(retryAfterSeconds(decisions[3]!, t0 + 3000), 57);
    assert.equal((await rl.hit('k', perMinute, t0 + 60_000)).allowed, true, 'next window');
    assert.equal((await rl.hit('other', perMinute, t0 + 3000)).remaining, 2, 'keys are independent');
  });

  it('does not count refused hits, and peek counts nothing', async () => {
    const rl = new MemoryRateLimiter();
    for (let i = 0; i < 10; i++) await rl.hit('k', perMinute, t0);
    assert.equal((await rl.peek('k', perMinute, t0)).remaining, 0);
    assert.equal((await rl.peek('fresh', perMinute, t0)).remaining, 3);
    assert.equal((await rl.peek('fresh', perMinute, t0)).remaining, 3);
  });

  it('lets soft limits go over and reports it', async () => {
    const rl = new MemoryRateLimiter();
    const soft = { limit: 2, windowMs: 1000, soft: true };
    const allowed = [];
    for (let i = 0; i < 4; i++) allowed.push((await rl.hit('s', soft, t0)).allowed);
    assert.deepEqual(allowed, [true, true, false, false]);
  });
});
