import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { IpWarmupsTable, WarmupCountsTable } from './tables/delivery.js';

/** An address in warm-up; `schedule` its own daily caps per provider, null for the default (delivery.warmup). */
const warmupRows = rowCodec<Selectable<IpWarmupsTable>>()({ schedule: jsonOrNull<number[]>() });
export type IpWarmup = EntityOf<typeof warmupRows>;
type WarmupCount = Selectable<WarmupCountsTable>;

export const listWarmups = async (db: Db): Promise<IpWarmup[]> =>
  warmupRows.decodeAll(await db.selectFrom('ip_warmups').selectAll().orderBy('address').execute());

/** Starts (or restarts from day 0) the warm-up of an address. */
export async function saveWarmup(db: Db, warmup: IpWarmup): Promise<void> {
  const row = warmupRows.encode(warmup);
  await db
    .insertInto('ip_warmups')
    .values(row)
    .onConflict((oc) => oc.column('address').doUpdateSet({ started_at: row.started_at, schedule: row.schedule }))
    .execute();
}

export async function deleteWarmup(db: Db, address: string): Promise<boolean> {
  const result = await db.deleteFrom('ip_warmups').where('address', '=', address).executeTakeFirst();
  await db.deleteFrom('warmup_counts').where('address', '=', address).execute();
  return Number(result.numDeletedRows) > 0;
}

/**
 * Counts `n` messages against the day's cap of `address` for `provider`, if they fit: one
 * conditional UPDATE, so nodes sharing the database never send more than the cap between them.
 */
export async function reserveWarmup(
  db: Db,
  key: { address: string; provider: string; periodStart: number },
  n: number,
  cap: number,
): Promise<boolean> {
  if (n > cap) return false;
  await db
    .insertInto('warmup_counts')
    .values({ address: key.address, provider: key.provider, period_start: key.periodStart, count: 0 })
    .onConflict((oc) => oc.columns(['address', 'provider', 'period_start']).doNothing())
    .execute();
  const result = await db
    .updateTable('warmup_counts')
    .set((eb) => ({ count: eb('count', '+', n) }))
    .where('address', '=', key.address)
    .where('provider', '=', key.provider)
    .where('period_start', '=', key.periodStart)
    .where('count', '<=', cap - n)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Messages counted against the day's cap of `address` for `provider` so far. */
export async function findWarmupCount(
  db: Db,
  key: { address: string; provider: string; periodStart: number },
): Promise<number> {
  const row = await db
    .selectFrom('warmup_counts')
    .select('count')
    .where('address', '=', key.address)
    .where('provider', '=', key.provider)
    .where('period_start', '=', key.periodStart)
    .executeTakeFirst();
  return row ? Number(row.count) : 0;
}

/** Gives back `n` of what reserveWarmup counted: messages that were not sent after all. */
export async function giveBackWarmup(
  db: Db,
  key: { address: string; provider: string; periodStart: number },
  n: number,
): Promise<void> {
  if (n <= 0) return;
  await db
    .updateTable('warmup_counts')
    .set((eb) => ({ count: eb('count', '-', n) }))
    .where('address', '=', key.address)
    .where('provider', '=', key.provider)
    .where('period_start', '=', key.periodStart)
    .where('count', '>=', n)
    .execute();
}

/** The counts of the given warm-up days, by address. */
export async function listWarmupCounts(
  db: Db,
  days: Array<{ address: string; periodStart: number }>,
): Promise<WarmupCount[]> {
  if (days.length === 0) return [];
  return db
    .selectFrom('warmup_counts')
    .selectAll()
    .where((eb) =>
      eb.or(days.map((d) => eb.and([eb('address', '=', d.address), eb('period_start', '=', d.periodStart)]))),
    )
    .orderBy('address')
    .orderBy('provider')
    .execute();
}

/** Counts of warm-up days before `before` are no longer read. */
export async function pruneWarmupCounts(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom('warmup_counts').where('period_start', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
