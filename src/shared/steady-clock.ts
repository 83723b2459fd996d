import { performance } from 'node:perf_hooks';
import type { Clock } from './clock.js';

/**
 * Milliseconds since the epoch that never go back: the wall clock, advanced by the monotonic
 * clock, following the wall clock forward when it jumps ahead (a VM resumed, NTP catching up)
 * and ignoring it when it is stepped back. For what compares times it took itself: a wall
 * clock stepped back by minutes neither strands the leases this node took (nor delays the
 * retries it scheduled) nor starts its rate-limit windows over early. Never behind the wall
 * clock, so a row made due now by another part of the program is due for it too.
 */
export function steadyClock(wall: () => number = Date.now, monotonic: () => number = () => performance.now()): Clock {
  let offset = wall() - monotonic();
  return {
    now: () => {
      const w = wall();
      const steady = offset + monotonic();
      if (w >= steady) {
        offset += w - steady;
        return w;
      }
      return Math.floor(steady);
    },
  };
}
