import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db, Dialect } from './infra/db.js';
import { deliveryAttemptRows, queueItemRows, type DeliveryAttempt, type QueueItem } from './emails.js';
import { claimRows, type Lease } from './lease.js';
import type { Database } from './tables/database.js';
import { PRIORITY, type QueueStatus } from './tables/emails.js';

/**
 * The delivery queue: one row per recipient, claimed with a lease (lease_owner,
 * lease_until). A node that dies leaves rows whose lease expires and that any node takes
 * again; nothing lives only in memory.
 */

/** Every (status, priority) a due row can have: one index range scan each. */
const DUE_ARMS = (['queued', 'deferred'] as const).flatMap((status) =>
  Object.values(PRIORITY).map((priority) => [status, priority] as const),
);

type DueQuery = SelectQueryBuilder<Database, 'queue_items', { id: string; priority: number; next_attempt_at: number }>;

/**
 * Claims up to `limit` due rows: queued or deferred rows whose time has come, and rows whose
 * holder's lease expired (a crashed or killed worker). Transactional (priority 0) before
 * marketing, then oldest due first; `excludeDomains` (destinations that cannot start now) are
 * left for later. The claimed emails show `sending` in the same transaction (on PostgreSQL in
 * the claim's own statement): call it inside one.
 *
 * How the rows are picked differs by engine. On SQLite, as a union of index range scans, one
 * per (status, priority), each already in `next_attempt_at` order and limited, then merged: a
 * single OR over the statuses makes SQLite read and sort every due row for each claim, which
 * cost tens of milliseconds per claim with 100,000 rows waiting, and grew with the backlog.
 * On PostgreSQL by one ordered scan, locked by the claim (store/lease.ts): union arms would each
 * lock up to `limit` rows of their own and hide the ones not claimed from the other nodes.
 */
export async function claimDueQueueItems(
  trx: Db,
  dialect: Dialect,
  lease: Lease,
  limit: number,
  excludeDomains: readonly string[] = [],
): Promise<QueueItem[]> {
  if (limit <= 0) return [];
  const now = lease.now;
  const due = (q: DueQuery): DueQuery =>
    excludeDomains.length > 0 ? q.where('recipient_domain', 'not in', [...excludeDomains]) : q;
  const columns = ['id', 'priority', 'next_attempt_at'] as const;
  if (dialect === 'postgres') {
    const pick = due(
      trx
        .selectFrom('queue_items')
        .select(columns)
        .where((w) =>
          w.or([
            w.and([w('status', 'in', ['queued', 'deferred']), w('next_attempt_at', '<=', now)]),
            w.and([w('status', '=', 'sending'), w('lease_until', '<', now)]),
          ]),
        ),
    )
      .orderBy('priority')
      .orderBy('next_attempt_at')
      .limit(limit)
      .clearSelect()
      .select('id');
    return inClaimOrder(queueItemRows.decodeAll(await claimWithEmails(trx, lease, pick)));
  }
  const arm = (name: string, pickArm: (q: DueQuery) => DueQuery) =>
    trx
      .selectFrom(
        due(pickArm(trx.selectFrom('queue_items').select(columns)))
          .limit(limit)
          .as(name),
      )
      .select(columns);
  const arms = DUE_ARMS.map(([status, priority], i) =>
    arm(`due${i}`, (q) =>
      q
        .where('status', '=', status)
        .where('priority', '=', priority)
        .where('next_attempt_at', '<=', now)
        .orderBy('next_attempt_at'),
    ),
  );
  const expired = arm('expired', (q) =>
    q.where('status', '=', 'sending').where('lease_until', '<', now).orderBy('priority').orderBy('next_attempt_at'),
  );
  const union = arms.reduce((all, a) => all.unionAll(a), expired);
  const pick = trx.selectFrom(union.as('due')).select('id').orderBy('priority').orderBy('next_attempt_at').limit(limit);
  const claimed = inClaimOrder(
    queueItemRows.decodeAll(
      await claimRows(trx, dialect, 'queue_items', lease, pick, { set: { status: 'sending', updated_at: now } }),
    ),
  );
  const emailIds = [...new Set(claimed.map((c) => c.email_id))];
  if (emailIds.length > 0) await markEmailsSending(trx, emailIds, now);
  return claimed;
}

/** RETURNING does not keep the sub-select's order: restored, so work starts by priority. */
const inClaimOrder = (claimed: QueueItem[]): QueueItem[] =>
  claimed.sort((x, y) => x.priority - y.priority || x.next_attempt_at - y.next_attempt_at);

/** The claimed rows' emails show `sending`, unless they are final already (cancelled meanwhile). */
const markEmailsSending = (trx: Db, ids: readonly string[], now: number) =>
  trx
    .updateTable('emails')
    .set({ status: 'sending', updated_at: now })
    .where('id', 'in', [...ids])
    .where('status', 'in', ['scheduled', 'queued', 'deferred'])
    .execute();

/**
 * PostgreSQL: the claim (store/lease.ts: the lease, FOR UPDATE SKIP LOCKED) and its emails'
 * `sending` in one statement, a data-modifying WITH: one round trip per claim instead of two.
 */
async function claimWithEmails(
  trx: Db,
  lease: Lease,
  pick: SelectQueryBuilder<Database, 'queue_items', { id: string }>,
) {
  return trx
    .with('claimed', (db) =>
      db
        .updateTable('queue_items')
        .set({ status: 'sending', updated_at: lease.now, lease_owner: lease.owner, lease_until: lease.until })
        .where('id', 'in', pick.forUpdate().skipLocked())
        .returningAll(),
    )
    .with('sending', (db) =>
      db
        .updateTable('emails')
        .set({ status: 'sending', updated_at: lease.now })
        .where('id', 'in', db.selectFrom('claimed').select('email_id'))
        .where('status', 'in', ['scheduled', 'queued', 'deferred']),
    )
    .selectFrom('claimed')
    .selectAll()
    .execute();
}

export interface QueueItemOutcome {
  status: QueueStatus;
  /** Counts an attempt (a real or simulated SMTP transaction); false for suppressed rows. */
  attempted: boolean;
  nextAttemptAt?: number;
  code: number | null;
  response: string | null;
  finished: boolean;
}

/** Rows per multi-row statement: well under SQLite's and PostgreSQL's limits on bound parameters. */
const CHUNK = 200;

export interface FinishedQueueItem extends QueueItemOutcome {
  id: string;
}

/**
 * Writes the results of attempts to rows this worker holds, in one statement per 200 rows
 * (`UPDATE … FROM (VALUES …)`, which SQLite and PostgreSQL both take): one round trip for a
 * batch of results instead of one per recipient. Returns the ids still held by `owner`, the
 * only rows written: a row whose lease expired and that another worker took is that worker's
 * to record.
 */
export async function finishQueueItems(
  trx: Db,
  owner: string,
  rows: readonly FinishedQueueItem[],
  now: number,
): Promise<Set<string>> {
  const mine = new Set<string>();
  for (let i = 0; i < rows.length; i += CHUNK) {
    // VALUES columns are column1…column7 on both engines; parameters are typed by CAST for PostgreSQL.
    const values = sql.join(
      rows
        .slice(i, i + CHUNK)
        .map(
          (r) =>
            sql`(${r.id}, ${r.status}, cast(${r.attempted ? 1 : 0} as integer), cast(${r.code} as integer), ${r.response}, cast(${r.nextAttemptAt ?? null} as bigint), cast(${r.finished ? now : null} as bigint))`,
        ),
    );
    const result = await sql<{ id: string }>`
      update queue_items set
        status = v.column2,
        attempts = attempts + v.column3,
        lease_owner = null,
        lease_until = null,
        last_code = v.column4,
        last_response = v.column5,
        updated_at = ${now},
        next_attempt_at = coalesce(v.column6, queue_items.next_attempt_at),
        finished_at = coalesce(v.column7, queue_items.finished_at)
      from (values ${values}) as v
      where queue_items.id = v.column1 and queue_items.lease_owner = ${owner} and queue_items.status = 'sending'
      returning queue_items.id`.execute(trx);
    for (const row of result.rows) mine.add(row.id);
  }
  return mine;
}

export const saveDeliveryAttempts = async (trx: Db, attempts: DeliveryAttempt[]): Promise<void> => {
  for (let i = 0; i < attempts.length; i += CHUNK)
    await trx
      .insertInto('delivery_attempts')
      .values(attempts.slice(i, i + CHUNK).map(deliveryAttemptRows.encode))
      .execute();
};

export interface QueueListQuery {
  workspaceId?: string | undefined;
  statuses?: readonly QueueStatus[] | undefined;
  emailId?: string | undefined;
  limit: number;
  offset: number;
}

const filtered = (db: Db, q: Omit<QueueListQuery, 'limit' | 'offset'>) => {
  let query = db.selectFrom('queue_items');
  if (q.workspaceId) query = query.where('workspace_id', '=', q.workspaceId);
  if (q.statuses && q.statuses.length > 0) query = query.where('status', 'in', [...q.statuses]);
  if (q.emailId) query = query.where('email_id', '=', q.emailId);
  return query;
};

/** Queue rows for operators, soonest due first. */
export const listQueueItems = async (db: Db, q: QueueListQuery): Promise<QueueItem[]> =>
  queueItemRows.decodeAll(
    await filtered(db, q)
      .selectAll()
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(q.limit)
      .offset(q.offset)
      .execute(),
  );

export async function countQueueItems(db: Db, q: Omit<QueueListQuery, 'limit' | 'offset'>): Promise<number> {
  const row = await filtered(db, q)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Rows due now (queued or deferred, their time come), per destination domain. */
export async function countDueQueueItemsByDomain(
  db: Db,
  domains: readonly string[],
  now: number,
): Promise<Map<string, number>> {
  if (domains.length === 0) return new Map();
  const rows = await db
    .selectFrom('queue_items')
    .select((eb) => ['recipient_domain', eb.fn.countAll<number>().as('n')])
    .where('status', 'in', ['queued', 'deferred'])
    .where('next_attempt_at', '<=', now)
    .where('recipient_domain', 'in', [...domains])
    .groupBy('recipient_domain')
    .execute();
  return new Map(rows.map((r) => [r.recipient_domain, Number(r.n)]));
}

/** Rows named by their own id or by their email's id. */
export const listQueueItemsByIds = async (db: Db, ids: readonly string[]): Promise<QueueItem[]> =>
  ids.length === 0
    ? []
    : queueItemRows.decodeAll(
        await db
          .selectFrom('queue_items')
          .selectAll()
          .where((eb) => eb.or([eb('id', 'in', [...ids]), eb('email_id', 'in', [...ids])]))
          .orderBy('id')
          .execute(),
      );

/** Makes waiting rows due now (operator retry). Rows in flight or finished are left alone. */
export async function makeQueueItemsDue(trx: Db, ids: readonly string[], now: number): Promise<QueueItem[]> {
  if (ids.length === 0) return [];
  return queueItemRows.decodeAll(
    await trx
      .updateTable('queue_items')
      .set({ next_attempt_at: now, updated_at: now })
      .where('id', 'in', [...ids])
      .where('status', 'in', ['queued', 'deferred'])
      .returningAll()
      .execute(),
  );
}

/** Cancels waiting rows (operator cancel), held ones included. Rows in flight or finished are left alone. */
export async function cancelQueueItems(trx: Db, ids: readonly string[], now: number): Promise<QueueItem[]> {
  if (ids.length === 0) return [];
  return queueItemRows.decodeAll(
    await trx
      .updateTable('queue_items')
      .set({
        status: 'cancelled',
        lease_owner: null,
        lease_until: null,
        finished_at: now,
        updated_at: now,
        last_response: 'cancelled by an operator',
      })
      .where('id', 'in', [...ids])
      .where('status', 'in', ['queued', 'deferred', 'held'])
      .returningAll()
      .execute(),
  );
}

/** Ids of waiting rows, for `queue retry --all`. */
export const listWaitingQueueItemIds = async (
  db: Db,
  statuses: readonly QueueStatus[],
  workspaceId?: string,
): Promise<string[]> => {
  let q = db
    .selectFrom('queue_items')
    .select('id')
    .where('status', 'in', [...statuses]);
  if (workspaceId) q = q.where('workspace_id', '=', workspaceId);
  return (await q.execute()).map((r) => r.id);
};

/** The queue item of one recipient of an email (addresses compared without case). */
export const findQueueItemOfRecipient = async (
  db: Db,
  emailId: string,
  recipient: string,
): Promise<QueueItem | undefined> => {
  const row = await db
    .selectFrom('queue_items')
    .selectAll()
    .where('email_id', '=', emailId)
    .where((eb) => eb(eb.fn('lower', ['recipient']), '=', recipient.toLowerCase()))
    .executeTakeFirst();
  return row && queueItemRows.decode(row);
};

/**
 * Marks a recipient bounced after the fact (an asynchronous bounce: the MX accepted, then
 * reported failure). A row a worker holds right now is left to that worker; false then, and
 * when it had bounced already.
 */
export async function bounceQueueItem(
  trx: Db,
  id: string,
  reply: { code: number | null; response: string },
  now: number,
): Promise<boolean> {
  const result = await trx
    .updateTable('queue_items')
    .set({
      status: 'bounced',
      last_code: reply.code,
      last_response: reply.response,
      lease_owner: null,
      lease_until: null,
      updated_at: now,
      finished_at: now,
    })
    .where('id', '=', id)
    .where('status', 'in', ['delivered', 'deferred', 'queued'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Rows waiting, held or in flight, by status (the metrics' queue depth); finished rows are not counted. */
export async function countActiveQueueItems(
  db: Db,
): Promise<Record<'queued' | 'sending' | 'deferred' | 'held', number>> {
  const depth = { queued: 0, sending: 0, deferred: 0, held: 0 };
  const rows = await db
    .selectFrom('queue_items')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where('status', 'in', Object.keys(depth) as Array<keyof typeof depth>)
    .groupBy('status')
    .execute();
  for (const row of rows) depth[row.status as keyof typeof depth] = Number(row.n);
  return depth;
}
