import type { Config, DomainLimit } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { DestinationBook } from './destination-book.js';
import { groupOfKey, limitSetting } from './destination-key.js';
import type { DomainLimiter } from './domain-limiter.js';

/** A destination that held mail back within this long is still in the same throttling episode (one log line). */
const THROTTLE_EPISODE_GAP_MS = 60_000;

export interface ThrottleLog {
  /** A job waits because of its destination's limit (not the node's own concurrency): counted, and logged once per episode. */
  throttled(key: string): void;
  /** Forgets episodes that ended (nothing held back for a while). */
  forgetEnded(): void;
}

export function throttleLog(deps: {
  config: Config['delivery'];
  clock: Clock;
  limiter: DomainLimiter;
  book: DestinationBook;
  limitOf(key: string): DomainLimit;
  log: Logger;
  metrics?: Metrics | undefined;
}): ThrottleLog {
  const { clock, limiter, book } = deps;
  const throttledAt = new Map<string, number>();
  return {
    throttled(key) {
      const hold = limiter.holdOf(key);
      if (hold === null) return;
      const d = book.get(key);
      // Counted by the class of a recipient domain it serves (gmail, microsoft, …).
      deps.metrics?.throttledWait(d ? ([...d.domains][0] ?? d.group) : groupOfKey(key), hold);
      const now = clock.now();
      const last = throttledAt.get(key);
      throttledAt.set(key, now);
      if (last !== undefined && now - last < THROTTLE_EPISODE_GAP_MS) return;
      const limit = deps.limitOf(key);
      deps.log.info(
        {
          destination: groupOfKey(key),
          source: d?.source ?? null,
          domains: d ? [...d.domains].slice(0, 10) : [],
          hold,
          concurrency: limiter.allowed(key),
          perMinute: limiter.snapshot(key).perMinute,
          limitPerMinute: limit.perMinute,
          setting: limitSetting(deps.config, groupOfKey(key)),
        },
        hold === 'paused'
          ? 'destination asked us to slow down: its mail waits'
          : 'destination limit reached: mail to it waits its turn',
      );
    },
    forgetEnded() {
      for (const [key, at] of throttledAt) if (clock.now() - at >= THROTTLE_EPISODE_GAP_MS) throttledAt.delete(key);
    },
  };
}
