import { sql, type Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { jsonText, jsonTrue, type Dialect } from './infra/dialect.js';
import type { QueueStatus } from './emails.js';
import type { ReputationStatesTable } from './tables/deliverability.js';

export type { ReputationState } from './tables/deliverability.js';
/** A sending domain's standing with the reputation guard: its counts over the window when last evaluated (kept as read). */
export type DomainReputation = Selectable<ReputationStatesTable>;

/**
 * The reputation guard's data: what each sending domain's live mail met with recently
 * (counted from events), its state, and holding and releasing its marketing mail in the queue.
 */

export interface DomainOutcomeCounts {
  workspace_id: string;
  domain_id: string;
  /** Accepted by the recipient's server (email.sent). */
  accepted: number;
  bounces: number;
  hard_bounces: number;
  complaints: number;
}

/**
 * Per sending domain, outcomes of live mail recorded since `since`, or since the domain was
 * last resumed when that is later (a resumed domain starts with a clean slate).
 */
export async function countDomainOutcomes(db: Db, dialect: Dialect, since: number): Promise<DomainOutcomeCounts[]> {
  const rows = await db
    .selectFrom('events as e')
    .innerJoin('emails as m', 'm.id', 'e.email_id')
    .leftJoin('reputation_states as r', 'r.domain_id', 'm.domain_id')
    .select((eb) => [
      'm.workspace_id',
      'm.domain_id',
      'e.type',
      eb
        .case()
        .when('e.type', '=', 'email.bounced')
        .then(jsonText(dialect, 'e.data', 'bounce.type'))
        .else(null)
        .end()
        .as('bounce_type'),
      eb.fn.countAll<number | string>().as('n'),
    ])
    .where('e.created_at', '>=', since)
    .where('e.type', 'in', ['email.sent', 'email.bounced', 'email.complained'])
    .where('m.test', '=', 0)
    .where('m.domain_id', 'is not', null)
    .where((eb) => eb.or([eb('r.resumed_at', 'is', null), eb('e.created_at', '>=', eb.ref('r.resumed_at'))]))
    .groupBy(['m.workspace_id', 'm.domain_id', 'e.type', 'bounce_type'])
    .execute();
  const byDomain = new Map<string, DomainOutcomeCounts>();
  for (const row of rows) {
    const key = row.domain_id!;
    const counts = byDomain.get(key) ?? {
      workspace_id: row.workspace_id,
      domain_id: key,
      accepted: 0,
      bounces: 0,
      hard_bounces: 0,
      complaints: 0,
    };
    const n = Number(row.n);
    if (row.type === 'email.sent') counts.accepted += n;
    else if (row.type === 'email.complained') counts.complaints += n;
    else {
      counts.bounces += n;
      if (row.bounce_type === 'hard') counts.hard_bounces += n;
    }
    byDomain.set(key, counts);
  }
  return [...byDomain.values()];
}

export interface DomainEngagement {
  domain_id: string;
  /** Live marketing messages with an open pixel delivered since `since` (or the resume). */
  tracked: number;
  /** Of them, opened by anyone, and by a person (not Apple's prefetch or a scanner: an image proxy's open is a person's). */
  opened: number;
  human_opened: number;
}

/** Per sending domain, the engagement of its tracked marketing mail delivered since `since`, or since it was last resumed. */
export async function countDomainEngagement(db: Db, dialect: Dialect, since: number): Promise<DomainEngagement[]> {
  const machine = jsonTrue(dialect, 'o.data', 'is_machine');
  const rows = await db
    .selectFrom('events as d')
    .innerJoin('emails as m', 'm.id', 'd.email_id')
    .leftJoin('reputation_states as r', 'r.domain_id', 'm.domain_id')
    .leftJoin('events as o', (join) => join.onRef('o.email_id', '=', 'm.id').on('o.type', '=', 'email.opened'))
    .select([
      'm.domain_id',
      sql<number>`count(distinct m.id)`.as('tracked'),
      sql<number>`count(distinct o.email_id)`.as('opened'),
      sql<number>`count(distinct case when ${machine} then null else o.email_id end)`.as('human_opened'),
    ])
    .where('d.type', '=', 'email.delivered')
    .where('d.created_at', '>=', since)
    .where('m.test', '=', 0)
    .where('m.type', '=', 'marketing')
    .where('m.track_opens', '=', 1)
    .where('m.domain_id', 'is not', null)
    .where((eb) => eb.or([eb('r.resumed_at', 'is', null), eb('d.created_at', '>=', eb.ref('r.resumed_at'))]))
    .groupBy('m.domain_id')
    .execute();
  return rows.map((r) => ({
    domain_id: r.domain_id!,
    tracked: Number(r.tracked),
    opened: Number(r.opened),
    human_opened: Number(r.human_opened),
  }));
}

export const listReputationStates = (db: Db, workspaceId?: string): Promise<DomainReputation[]> => {
  let q = db.selectFrom('reputation_states').selectAll();
  if (workspaceId) q = q.where('workspace_id', '=', workspaceId);
  return q.execute();
};

export const findReputationState = (db: Db, domainId: string): Promise<DomainReputation | undefined> =>
  db.selectFrom('reputation_states').selectAll().where('domain_id', '=', domainId).executeTakeFirst();

export async function saveReputationState(db: Db, row: DomainReputation): Promise<void> {
  const { domain_id, ...rest } = row;
  await db
    .insertInto('reputation_states')
    .values(row)
    .onConflict((oc) => oc.column('domain_id').doUpdateSet(rest))
    .execute();
}

/** Domains whose marketing mail is held now. */
export const listPausedDomainIds = async (db: Db): Promise<string[]> =>
  (await db.selectFrom('reputation_states').select('domain_id').where('state', '=', 'paused').execute()).map(
    (r) => r.domain_id,
  );

/** The waiting live marketing rows of a domain (queued or deferred), up to `limit`: held now. Returns the rows' email ids. */
export async function holdWaitingMarketing(
  trx: Db,
  domainId: string,
  now: number,
  limit: number,
): Promise<Array<{ id: string; email_id: string; recipient: string }>> {
  return trx
    .updateTable('queue_items')
    .set({ status: 'held', updated_at: now })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('queue_items as q')
        .innerJoin('emails as m', 'm.id', 'q.email_id')
        .select('q.id')
        .where('q.status', 'in', ['queued', 'deferred'])
        .where('m.domain_id', '=', domainId)
        .where('m.type', '=', 'marketing')
        .where('m.test', '=', 0)
        .limit(limit),
    )
    .where('status', 'in', ['queued', 'deferred'])
    .returning(['id', 'email_id', 'recipient'])
    .execute();
}

/**
 * Rows this worker just claimed that must wait instead (held): only while their sending domain
 * is still paused, read in this statement, so a node whose list of paused domains is a moment
 * old cannot hold again what a resume just released. Returns the ids held.
 */
export async function holdClaimedQueueItems(
  trx: Db,
  owner: string,
  ids: readonly string[],
  now: number,
): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await trx
    .updateTable('queue_items')
    .set({ status: 'held', lease_owner: null, lease_until: null, updated_at: now })
    .where('lease_owner', '=', owner)
    .where('status', '=', 'sending')
    .where('id', 'in', [...ids])
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('emails as m')
          .innerJoin('reputation_states as r', 'r.domain_id', 'm.domain_id')
          .select('m.id')
          .whereRef('m.id', '=', 'queue_items.email_id')
          .where('r.state', '=', 'paused'),
      ),
    )
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/** Releases up to `limit` held rows of a domain: due now, as they were before (queued, or deferred after attempts). */
export async function releaseHeldQueueItems(trx: Db, domainId: string, now: number, limit: number): Promise<string[]> {
  const rows = await trx
    .updateTable('queue_items')
    .set({
      status: sql<QueueStatus>`case when attempts > 0 then 'deferred' else 'queued' end`,
      next_attempt_at: now,
      updated_at: now,
    })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('queue_items as q')
        .innerJoin('emails as m', 'm.id', 'q.email_id')
        .select('q.id')
        .where('q.status', '=', 'held')
        .where('m.domain_id', '=', domainId)
        .limit(limit),
    )
    .where('status', '=', 'held')
    .returning('email_id')
    .execute();
  return rows.map((r) => r.email_id);
}

/** Held rows per domain of a workspace (or of all). */
export async function countHeldByDomain(db: Db, workspaceId?: string): Promise<Map<string, number>> {
  let q = db
    .selectFrom('queue_items as q')
    .innerJoin('emails as m', 'm.id', 'q.email_id')
    .select((eb) => ['m.domain_id', eb.fn.countAll<number | string>().as('n')])
    .where('q.status', '=', 'held');
  if (workspaceId) q = q.where('q.workspace_id', '=', workspaceId);
  const rows = await q.groupBy('m.domain_id').execute();
  return new Map(rows.map((r) => [r.domain_id ?? '', Number(r.n)]));
}
