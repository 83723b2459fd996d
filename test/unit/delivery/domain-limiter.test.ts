import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DomainLimiter, domainLimitOf } from '../../../src/delivery/domain-limiter.js';

const setup = (limits: Record<string, { concurrency: number; perMinute: number }> = {}) => {
  let now = 1_000_000;
  const limiter = new DomainLimiter(domainLimitOf(limits, { concurrency: 3, perMinute: 6000 }), () => now);
  return { limiter, advance: (ms: number) => (now += ms) };
};

describe('DomainLimiter', () => {
  it('allows the configured number of simultaneous transactions per domain', () => {
    const { limiter } = setup({ 'gmail.com': { concurrency: 2, perMinute: 6000 } });
    assert.equal(limiter.tryStart('gmail.com'), 0);
    assert.equal(limiter.tryStart('gmail.com'), 0);
    assert.notEqual(limiter.tryStart('gmail.com'), 0, 'gmail.com is at its limit');
    assert.equal(limiter.tryStart('other.example'), 0, 'other domains are not affected');
    assert.equal(limiter.holdOf('gmail.com'), 'concurrency');
    assert.equal(limiter.holdOf('other.example'), null);
    limiter.finish('gmail.com', 'ok');
    assert.equal(limiter.tryStart('gmail.com'), 0);
  });

  it('spreads messages over the minute: a burst of five seconds, then the rate', () => {
    const { limiter, advance } = setup({ 'slow.example': { concurrency: 100, perMinute: 60 } });
    let started = 0;
    while (limiter.tryStart('slow.example') === 0) started++;
    assert.equal(started, 5, 'five seconds worth at 60/min');
    assert.equal(limiter.waitMs('slow.example'), 1000);
    assert.equal(limiter.holdOf('slow.example'), 'rate');
    advance(1000);
    assert.equal(limiter.tryStart('slow.example'), 0);
    assert.notEqual(limiter.tryStart('slow.example'), 0);
  });

  it('halves the concurrency and pauses after a throttling reply, and recovers one slot per success', () => {
    const { limiter, advance } = setup({ 'busy.example': { concurrency: 8, perMinute: 100_000 } });
    for (let i = 0; i < 4; i++) assert.equal(limiter.tryStart('busy.example'), 0);
    limiter.finish('busy.example', 'throttled');
    assert.equal(limiter.snapshot('busy.example').allowed, 4);
    assert.equal(limiter.canStart('busy.example'), false, 'paused');
    assert.equal(limiter.waitMs('busy.example'), 30_000);
    assert.equal(limiter.holdOf('busy.example'), 'paused');
    assert.equal(limiter.allowed('busy.example'), 4);
    limiter.finish('busy.example', 'throttled');
    assert.equal(limiter.snapshot('busy.example').allowed, 2);
    assert.equal(limiter.waitMs('busy.example'), 60_000, 'the pause doubles');
    advance(60_000);
    // Two still in flight, allowed 2: full until one finishes.
    assert.equal(limiter.canStart('busy.example'), false);
    limiter.finish('busy.example', 'ok');
    assert.equal(limiter.snapshot('busy.example').allowed, 3);
    assert.equal(limiter.tryStart('busy.example'), 0);
    limiter.finish('busy.example', 'ok');
    limiter.finish('busy.example', 'ok');
    assert.equal(limiter.snapshot('busy.example').allowed, 5);
    for (let i = 0; i < 10; i++) {
      limiter.tryStart('busy.example');
      limiter.finish('busy.example', 'ok');
    }
    assert.equal(limiter.snapshot('busy.example').allowed, 8, 'back to the configured limit, not above');
  });

  it('forgets idle domains at full health', () => {
    const { limiter, advance } = setup();
    limiter.tryStart('a.example');
    limiter.finish('a.example', 'ok');
    advance(60_000);
    limiter.prune();
    assert.deepEqual(limiter.domains(), []);
    assert.equal(limiter.snapshot('a.example').active, 0);
  });
});
