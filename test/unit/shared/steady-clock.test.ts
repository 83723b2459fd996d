import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryRateLimiter } from '../../../src/shared/fixed-window.js';
import { steadyClock } from '../../../src/shared/steady-clock.js';

/** A wall clock that can be stepped, and a monotonic clock that only moves forward with real time. */
function clocks(start = 1_800_000_000_000) {
  let wall = start;
  let mono = 5_000;
  return {
    wall: () => wall,
    mono: () => mono,
    elapse(ms: number) {
      wall += ms;
      mono += ms;
    },
    step(ms: number) {
      wall += ms;
    },
  };
}

describe('the steady clock: a wall clock stepped back moves nothing it measures', () => {
  it('reads the wall clock, goes on with the monotonic clock through a step back, and follows a step forward', () => {
    const c = clocks();
    const steady = steadyClock(c.wall, c.mono);
    assert.equal(steady.now(), c.wall());
    c.elapse(1000);
    assert.equal(steady.now(), c.wall());
    const before = steady.now();
    c.step(-5 * 60_000); // five minutes back
    assert.equal(steady.now(), before, 'not back');
    c.elapse(30_000);
    assert.equal(steady.now(), before + 30_000, 'on at the real rate');
    c.step(10 * 60_000); // the wall clock jumps ahead of it (a VM resumed)
    assert.equal(steady.now(), c.wall(), 'never behind the wall clock');
    c.elapse(1);
    assert.equal(steady.now(), c.wall());
  });

  it('a rate-limit window is not started over early when the wall clock steps back', async () => {
    const c = clocks();
    const steady = steadyClock(c.wall, c.mono);
    const limit = { limit: 3, windowMs: 60_000, soft: false };
    const stepped = new MemoryRateLimiter(steady.now);
    const naive = new MemoryRateLimiter();
    for (let i = 0; i < 3; i++) {
      assert.equal((await stepped.hit('k', limit, c.wall())).allowed, true);
      assert.equal((await naive.hit('k', limit, c.wall())).allowed, true);
    }
    c.step(-2 * 60_000);
    const refused = await stepped.hit('k', limit, c.wall());
    assert.equal(refused.allowed, false, 'still the same window');
    // The reset is given back in the caller's time: a Retry-After from its own `now` is right.
    assert.ok(
      refused.resetAt - c.wall() > 0 && refused.resetAt - c.wall() <= 60_000,
      String(refused.resetAt - c.wall()),
    );
    assert.equal(
      (await naive.hit('k', limit, c.wall())).allowed,
      true,
      'the wall clock alone would have let it through',
    );
    c.elapse(60_000);
    assert.equal((await stepped.hit('k', limit, c.wall())).allowed, true, 'a minute of real time later, a new window');
  });
});
