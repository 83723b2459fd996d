import { sql, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Db } from './infra/db.js';
import type { Dialect } from './infra/dialect.js';
import { refreshEmailStatuses } from './emails.js';
import type { Database } from './tables.js';

/**
 * Leases: how a worker owns a row for a while. Every table a worker claims from carries
 * `lease_owner` and `lease_until`; a claim writes both in one statement, the holder renews the
 * lease while its work runs, and gives the row back (or records the result) when it is done. A
 * holder that dies leaves a lease that runs out, and any worker claims the row again: work is
 * at least once, and nothing lives only in memory.
 */
export type LeasedTable =
  | 'queue_items'
  | 'webhook_deliveries'
  | 'workflow_runs'
  | 'workflow_triggers'
  | 'campaigns'
  | 'contact_imports'
  | 'inbox_agent_runs';

export interface Lease {
  owner: string;
  now: number;
  /** Epoch ms the claim holds until; past it another worker may take the row. */
  until: number;
}

/** Rows no live lease holds: never leased, given back, or their holder's lease ran out. */
export const unleased = (now: number, column = 'lease_until') =>
  sql<boolean>`(${sql.ref(column)} is null or ${sql.ref(column)} < ${now})`;

type Pick = SelectQueryBuilder<Database, never, { id: string }>;

/**
 * Claims the rows `pick` chooses, in one statement: `UPDATE … SET lease … WHERE id IN (pick)
 * RETURNING *`, with `set` written beside the lease (a status, say).
 *
 * On PostgreSQL the pick takes `FOR UPDATE SKIP LOCKED` (of `lockOf` when it reads several
 * tables), so workers on several nodes claim disjoint rows without waiting for each other.
 * SQLite runs the statement under its one write lock: two claims never meet.
 */
export async function claimRows<T extends LeasedTable>(
  db: Db,
  dialect: Dialect,
  table: T,
  lease: Lease,
  pick: SelectQueryBuilder<Database, any, { id: string }>,
  options: { set?: Record<string, unknown>; lockOf?: string } = {},
): Promise<Array<Selectable<Database[T]>>> {
  const picked = (
    dialect === 'postgres' ? (options.lockOf ? pick.forUpdate(options.lockOf) : pick.forUpdate()).skipLocked() : pick
  ) as Pick;
  // eslint-disable-next-line no-restricted-syntax -- kysely cannot type an update of a table named by a parameter
  return (await db
    .updateTable(table as 'queue_items')
    .set({ ...options.set, lease_owner: lease.owner, lease_until: lease.until })
    .where('id', 'in', picked)
    .returningAll()
    .execute()) as unknown as Array<Selectable<Database[T]>>;
}

/** Rows per statement when a list of ids is written: well under both engines' parameter limits. */
const CHUNK = 500;

/** Keeps the leases of work still running from running out; returns how many rows `owner` still held. */
export async function renewLeases(
  db: Db,
  table: LeasedTable,
  owner: string,
  ids: readonly string[],
  until: number,
): Promise<number> {
  let renewed = 0;
  for (let i = 0; i < ids.length; i += CHUNK) {
    const result = await db
      .updateTable(table as 'queue_items')
      .set({ lease_until: until })
      .where('lease_owner', '=', owner)
      .where('id', 'in', ids.slice(i, i + CHUNK))
      .executeTakeFirst();
    renewed += Number(result.numUpdatedRows);
  }
  return renewed;
}

/**
 * Gives rows back without a result, due again at once (or at `dueAt` for the queue, with a note
 * of why it waits): work claimed but not started at a stop, a destination that must wait. A
 * queue row goes back to `queued` (`deferred` once attempted) and its email's status follows.
 */
export async function releaseLeases(
  db: Db,
  table: LeasedTable,
  owner: string,
  ids: readonly string[],
  options: { dueAt?: number; now?: number; note?: string } = {},
): Promise<string[]> {
  const released: string[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    if (table !== 'queue_items') {
      const rows = await db
        .updateTable(table as 'webhook_deliveries')
        .set({ lease_owner: null, lease_until: null })
        .where('lease_owner', '=', owner)
        .where('id', 'in', chunk)
        .returning('id')
        .execute();
      released.push(...rows.map((r) => r.id));
      continue;
    }
    const now = options.now ?? Date.now();
    const rows = await db
      .updateTable('queue_items')
      .set({
        ...requeued,
        next_attempt_at: options.dueAt ?? now,
        updated_at: now,
        // Why it waits, for `mailsvc queue list` (a row never attempted has no reply of its own).
        ...(options.note
          ? { last_response: sql<string>`case when attempts > 0 then last_response else ${options.note} end` }
          : {}),
      })
      .where('lease_owner', '=', owner)
      .where('status', '=', 'sending')
      .where('id', 'in', chunk)
      .returning(['id', 'email_id'])
      .execute();
    await refreshEmailStatuses(db, [...new Set(rows.map((r) => r.email_id))], now);
    released.push(...rows.map((r) => r.id));
  }
  return released;
}

/** A claimed queue row given back: waiting again, as it was before the claim. */
const requeued = {
  status: sql<'queued' | 'deferred'>`case when attempts > 0 then 'deferred' else 'queued' end`,
  lease_owner: null,
  lease_until: null,
};

/**
 * Every lease `owner` holds given back (every lease of any owner when `owner` is null), due at
 * once: a delivery thread or node that died, whose owner id is known, so its rows need not wait
 * for their leases to run out; or a single SQLite node as it starts, since its node lock proves
 * that no other server holds one (PostgreSQL nodes wait for a dead node's leases to run out).
 * Returns how many rows of each table were held.
 */
export async function releaseHeldLeases(
  db: Db,
  owner: string | null,
  now: number,
): Promise<Record<LeasedTable, number>> {
  return db.transaction().execute(async (trx) => {
    let queue = trx
      .updateTable('queue_items')
      .set({ ...requeued, next_attempt_at: now, updated_at: now })
      .where('status', '=', 'sending');
    if (owner !== null) queue = queue.where('lease_owner', '=', owner);
    const held = await queue.returning('email_id').execute();
    await refreshEmailStatuses(trx, [...new Set(held.map((r) => r.email_id))], now);
    const counts = { queue_items: held.length } as Record<LeasedTable, number>;
    for (const table of [
      'webhook_deliveries',
      'workflow_runs',
      'workflow_triggers',
      'campaigns',
      'contact_imports',
      'inbox_agent_runs',
    ] as const) {
      const q = trx.updateTable(table as 'webhook_deliveries').set({ lease_owner: null, lease_until: null });
      const result = await (
        owner === null ? q.where('lease_owner', 'is not', null) : q.where('lease_owner', '=', owner)
      ).executeTakeFirst();
      counts[table] = Number(result.numUpdatedRows);
    }
    return counts;
  });
}
