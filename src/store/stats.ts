import { sql } from 'kysely';
import type { Db } from './infra/db.js';
import { jsonText, type Dialect } from './infra/dialect.js';
import type { StatsHourlyTable } from './tables.js';

/**
 * Hourly counts of what happened to mail (`stats_hourly`; test mail apart), rolled up from events and
 * delivery attempts: the overview's charts and `GET /v1/emails/metrics` read these few rows
 * instead of scanning weeks of events. An hour is recomputed whole from its events, so a
 * roll-up can run again (or on another node) without counting anything twice.
 */

export const HOUR = 3600_000;
export const floorHour = (ms: number): number => ms - (((ms % HOUR) + HOUR) % HOUR);

/** One row of stats_hourly. */
export type StatRow = StatsHourlyTable;

const EVENT_TYPES = [
  'email.sent',
  'email.delivered',
  'email.delivery_delayed',
  'email.bounced',
  'email.complained',
  'email.opened',
  'email.clicked',
  'email.suppressed',
  'email.failed',
  'email.held',
];

const ENGAGEMENT = ['email.opened', 'email.clicked'];
const isTrue = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 'true';

/** Event counts in [from, to) by workspace, hour, sending domain, type, the JSON details that split a type (bounce type; first, machine, first human engagement), and live or test mail. */
export async function aggregateEvents(db: Db, dialect: Dialect, from: number, to: number) {
  const rows = await db
    .selectFrom('events as e')
    .innerJoin('emails as m', 'm.id', 'e.email_id')
    .select((eb) => [
      'm.workspace_id',
      'm.test',
      sql<number>`e.created_at - (e.created_at % ${HOUR})`.as('hour'),
      'm.domain_id',
      'e.type',
      eb
        .case()
        .when('e.type', '=', 'email.bounced')
        .then(jsonText(dialect, 'e.data', 'bounce.type'))
        .when('e.type', 'in', ENGAGEMENT)
        .then(jsonText(dialect, 'e.data', 'first'))
        .else(null)
        .end()
        .as('detail'),
      eb
        .case()
        .when('e.type', 'in', ENGAGEMENT)
        .then(jsonText(dialect, 'e.data', 'is_machine'))
        .else(null)
        .end()
        .as('machine'),
      eb
        .case()
        .when('e.type', 'in', ENGAGEMENT)
        .then(jsonText(dialect, 'e.data', 'first_human'))
        .else(null)
        .end()
        .as('first_human'),
      eb.fn.countAll<number | string>().as('n'),
    ])
    .where('e.created_at', '>=', from)
    .where('e.created_at', '<', to)
    .where('e.type', 'in', EVENT_TYPES)
    .groupBy(['m.workspace_id', 'm.test', 'hour', 'm.domain_id', 'e.type', 'detail', 'machine', 'first_human'])
    .execute();
  return rows.map((r) => ({
    workspace_id: r.workspace_id,
    test: Number(r.test),
    hour: Number(r.hour),
    domain_id: r.domain_id ?? '',
    type: r.type,
    detail: r.detail === null ? null : String(r.detail),
    // JSON booleans read back as 1/0 (SQLite) or true/false (PostgreSQL).
    machine: isTrue(r.machine),
    // Events recorded before engagement was classified count as people's.
    firstHuman: r.first_human === null ? isTrue(r.detail) : isTrue(r.first_human),
    count: Number(r.n),
  }));
}

/** Delivery attempts of live mail in [from, to) by workspace, hour, recipient domain, MX host and outcome. */
export async function aggregateAttempts(db: Db, from: number, to: number) {
  const rows = await db
    .selectFrom('delivery_attempts as a')
    .innerJoin('queue_items as q', 'q.id', 'a.queue_item_id')
    .select((eb) => [
      'a.workspace_id',
      sql<number>`a.started_at - (a.started_at % ${HOUR})`.as('hour'),
      'q.recipient_domain',
      'a.mx_host',
      'a.outcome',
      eb.fn.countAll<number | string>().as('n'),
    ])
    .where('a.started_at', '>=', from)
    .where('a.started_at', '<', to)
    .where('q.test', '=', 0)
    .groupBy(['a.workspace_id', 'hour', 'q.recipient_domain', 'a.mx_host', 'a.outcome'])
    .execute();
  return rows.map((r) => ({
    workspace_id: r.workspace_id,
    hour: Number(r.hour),
    recipient_domain: r.recipient_domain,
    mx_host: r.mx_host,
    outcome: r.outcome,
    count: Number(r.n),
  }));
}

/** Replaces the rows of the hours in [from, to) with `rows`, in one transaction. */
export async function replaceStats(db: Db, from: number, to: number, rows: StatRow[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('stats_hourly').where('hour', '>=', from).where('hour', '<', to).execute();
    for (let i = 0; i < rows.length; i += 500)
      await trx
        .insertInto('stats_hourly')
        .values(rows.slice(i, i + 500))
        .execute();
  });
}

/** The latest hour rolled up, or null before the first roll-up. */
export async function lastStatsHour(db: Db): Promise<number | null> {
  const row = await db
    .selectFrom('stats_hourly')
    .select((eb) => eb.fn.max('hour').as('h'))
    .executeTakeFirst();
  return row?.h == null ? null : Number(row.h);
}

/** The time of the oldest event (where a first roll-up starts). */
export async function firstEventAt(db: Db): Promise<number | null> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.min('created_at').as('t'))
    .executeTakeFirst();
  return row?.t == null ? null : Number(row.t);
}

interface StatsQuery {
  workspaceId: string;
  from: number;
  to: number;
  domainIds?: readonly string[] | undefined;
  /** Only the per-destination rows (`destination` <> ''), or only the others. */
  destinations: boolean;
  /** Test mail's rows instead of live mail's. */
  test?: boolean | undefined;
}

export async function listStats(db: Db, q: StatsQuery): Promise<StatRow[]> {
  let query = db
    .selectFrom('stats_hourly')
    .selectAll()
    .where('workspace_id', '=', q.workspaceId)
    .where('hour', '>=', q.from)
    .where('hour', '<', q.to)
    .where('destination', q.destinations ? '<>' : '=', '')
    .where('test', '=', q.test ? 1 : 0);
  if (q.domainIds && q.domainIds.length > 0) query = query.where('domain_id', 'in', [...q.domainIds]);
  const rows = await query.execute();
  return rows.map((r) => ({ ...r, hour: Number(r.hour), count: Number(r.count), test: Number(r.test) }));
}

export const deleteStatsBefore = async (db: Db, cutoff: number): Promise<number> =>
  Number((await db.deleteFrom('stats_hourly').where('hour', '<', cutoff).executeTakeFirst()).numDeletedRows);

/** A workspace's queue rows waiting, in flight or held, by status (the overview's queue depth). */
export async function countQueueDepth(
  db: Db,
  workspaceId: string,
): Promise<Record<'queued' | 'sending' | 'deferred' | 'held', number>> {
  const depth = { queued: 0, sending: 0, deferred: 0, held: 0 };
  const rows = await db
    .selectFrom('queue_items')
    .select((eb) => ['status', eb.fn.countAll<number | string>().as('n')])
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', Object.keys(depth) as Array<keyof typeof depth>)
    .groupBy('status')
    .execute();
  for (const row of rows) depth[row.status as keyof typeof depth] = Number(row.n);
  return depth;
}
