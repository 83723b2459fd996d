import { decide, windowStart, type Decision, type Limit, type RateLimiter } from '../shared/fixed-window.js';
import type { Db } from './infra/db.js';

/**
 * Adds `cost` to a window's counter in one statement and returns the new count, or null when
 * the addition would pass `ceiling` (then nothing is added). The row lock of the upsert
 * serialises concurrent hits from every node, so no two see the same count.
 */
async function addToWindow(
  db: Db,
  key: string,
  windowStart: number,
  expiresAt: number,
  cost: number,
  ceiling: number | null,
): Promise<number | null> {
  const row = await db
    .insertInto('rate_limit_windows')
    .values({ key, window_start: windowStart, count: cost, expires_at: expiresAt })
    .onConflict((oc) => {
      const update = oc
        .columns(['key', 'window_start'])
        .doUpdateSet((eb) => ({ count: eb('rate_limit_windows.count', '+', eb.ref('excluded.count')) }));
      return ceiling === null
        ? update
        : update.where((eb) => eb(eb('rate_limit_windows.count', '+', eb.ref('excluded.count')), '<=', ceiling));
    })
    .returning('count')
    .executeTakeFirst();
  return row ? Number(row.count) : null;
}

async function windowCount(db: Db, key: string, windowStart: number): Promise<number> {
  const row = await db
    .selectFrom('rate_limit_windows')
    .select('count')
    .where('key', '=', key)
    .where('window_start', '=', windowStart)
    .executeTakeFirst();
  return row ? Number(row.count) : 0;
}

export async function deleteExpiredWindows(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('rate_limit_windows').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

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
    if (!limit.soft && cost > limit.limit)
      return decide((await windowCount(this.db, rowKey, start)) + cost, limit, start);
    const count = await addToWindow(
      this.db,
      rowKey,
      start,
      start + limit.windowMs,
      cost,
      limit.soft ? null : limit.limit,
    );
    if (count !== null) return decide(count, limit, start);
    return decide((await windowCount(this.db, rowKey, start)) + cost, limit, start);
  }

  async peek(key: string, limit: Limit, now: number): Promise<Decision> {
    const start = windowStart(now, limit.windowMs);
    return decide(await windowCount(this.db, `${key}|${limit.windowMs}`, start), limit, start);
  }
}
