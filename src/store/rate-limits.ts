import type { Db } from './db.js';

/**
 * Adds `cost` to a window's counter in one statement and returns the new count, or null when
 * the addition would pass `ceiling` (then nothing is added). The row lock of the upsert
 * serialises concurrent hits from every node, so no two see the same count.
 */
export async function addToWindow(db: Db, key: string, windowStart: number, expiresAt: number, cost: number, ceiling: number | null): Promise<number | null> {
  const row = await db
    .insertInto('rate_limit_windows')
    .values({ key, window_start: windowStart, count: cost, expires_at: expiresAt })
    .onConflict((oc) => {
      const update = oc.columns(['key', 'window_start']).doUpdateSet((eb) => ({ count: eb('rate_limit_windows.count', '+', eb.ref('excluded.count')) }));
      return ceiling === null ? update : update.where((eb) => eb(eb('rate_limit_windows.count', '+', eb.ref('excluded.count')), '<=', ceiling));
    })
    .returning('count')
    .executeTakeFirst();
  return row ? Number(row.count) : null;
}

export async function windowCount(db: Db, key: string, windowStart: number): Promise<number> {
  const row = await db.selectFrom('rate_limit_windows').select('count').where('key', '=', key).where('window_start', '=', windowStart).executeTakeFirst();
  return row ? Number(row.count) : 0;
}

export async function deleteExpiredWindows(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('rate_limit_windows').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
