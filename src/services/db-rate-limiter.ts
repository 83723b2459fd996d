import type { Db } from '../store/db.js';
import { addToWindow, windowCount } from '../store/rate-limits.js';
import { decide, windowStart, type Decision, type Limit, type RateLimiter } from './rate-limits.js';

/**
 * Fixed-window counters in the database, so that every node behind a load balancer counts
 * against the same window. Exact across nodes within a window (one atomic upsert per hit);
 * the fixed-window burst of up to 2 × limit across a boundary stays, as with the memory
 * limiter. Costs one round trip per limited request.
 */
export class DatabaseRateLimiter implements RateLimiter {
  constructor(private readonly db: Db) {}

  async hit(key: string, limit: Limit, now: number, cost = 1): Promise<Decision> {
    const start = windowStart(now, limit.windowMs);
    const rowKey = `${key}|${limit.windowMs}`;
    // A refused hit is not counted (as in MemoryRateLimiter): the upsert adds only while the
    // sum stays within the limit, except for soft limits, which always count.
    if (!limit.soft && cost > limit.limit) return decide((await windowCount(this.db, rowKey, start)) + cost, limit, start);
    const count = await addToWindow(this.db, rowKey, start, start + limit.windowMs, cost, limit.soft ? null : limit.limit);
    if (count !== null) return decide(count, limit, start);
    return decide((await windowCount(this.db, rowKey, start)) + cost, limit, start);
  }

  async peek(key: string, limit: Limit, now: number): Promise<Decision> {
    const start = windowStart(now, limit.windowMs);
    return decide(await windowCount(this.db, `${key}|${limit.windowMs}`, start), limit, start);
  }
}
