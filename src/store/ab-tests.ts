import { sql, type Selectable } from 'kysely';
import { campaignRows, type Campaign, type WinnerChoice } from './campaigns.js';
import type { Db } from './infra/db.js';
import { jsonTrue, type Dialect } from './infra/dialect.js';
import type { AbPhase } from './emails.js';
import type { CampaignVariantsTable } from './tables/campaigns.js';

/** One variant of an A/B test: what it changes of the campaign's content (null: the campaign's own). */
export type CampaignVariant = Selectable<CampaignVariantsTable>;

/**
 * A/B tests and holdouts of campaigns: the variants, the contacts held out, the wait for the
 * winner (a due time on the campaign, chosen once by a compare-and-set) and what each group
 * of messages met with.
 */

export const listCampaignVariants = (db: Db, campaignId: string): Promise<CampaignVariant[]> =>
  db.selectFrom('campaign_variants').selectAll().where('campaign_id', '=', campaignId).orderBy('position').execute();

/** Replaces a campaign's variants (none: no test). */
export async function saveCampaignVariants(
  trx: Db,
  campaignId: string,
  rows: ReadonlyArray<Omit<CampaignVariant, 'campaign_id'>>,
): Promise<void> {
  await trx.deleteFrom('campaign_variants').where('campaign_id', '=', campaignId).execute();
  if (rows.length > 0)
    await trx
      .insertInto('campaign_variants')
      .values(rows.map((r) => ({ ...r, campaign_id: campaignId })))
      .execute();
}

/** Records contacts held out of a campaign (again after a crash: nothing twice). */
export async function saveHoldouts(
  trx: Db,
  campaignId: string,
  subscriberIds: readonly string[],
  now: number,
): Promise<void> {
  if (subscriberIds.length === 0) return;
  await trx
    .insertInto('campaign_holdouts')
    .values(subscriberIds.map((subscriber_id) => ({ campaign_id: campaignId, subscriber_id, created_at: now })))
    .onConflict((oc) => oc.columns(['campaign_id', 'subscriber_id']).doNothing())
    .execute();
}

export const countHoldouts = async (db: Db, campaignId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('campaign_holdouts')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('campaign_id', '=', campaignId)
        .executeTakeFirstOrThrow()
    ).n,
  );

/** Which of these contacts a message of the campaign went to already (the test's, when the winner goes to the rest). */
export async function listSubscribersSent(
  db: Db,
  campaignId: string,
  subscriberIds: readonly string[],
): Promise<Set<string>> {
  if (subscriberIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('emails')
    .select('subscriber_id')
    .where('campaign_id', '=', campaignId)
    .where('subscriber_id', 'in', [...subscriberIds])
    .execute();
  return new Set(rows.map((r) => r.subscriber_id!));
}

/** Tests whose time is up: their winner is due. */
export const listDueTests = async (db: Db, now: number, limit: number): Promise<Campaign[]> =>
  campaignRows.decodeAll(
    await db
      .selectFrom('campaigns')
      .selectAll()
      .where('status', '=', 'testing')
      .where('winner_due_at', '<=', now)
      .orderBy('winner_due_at')
      .limit(limit)
      .execute(),
  );

/**
 * Records the winner of a test still waiting for it, and queues the campaign again for the
 * rest: a compare-and-set, so a winner is chosen once (by the metric on one node, or by hand).
 */
export async function saveWinner(db: Db, id: string, variant: string, by: WinnerChoice, now: number): Promise<boolean> {
  const result = await db
    .updateTable('campaigns')
    .set({
      status: 'queuing',
      winner_variant: variant,
      winner_chosen_by: by,
      winner_chosen_at: now,
      cursor: null,
      lease_owner: null,
      lease_until: null,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('status', '=', 'testing')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Messages of one group of a campaign: the variant and phase (both null outside a test), and what they met with. */
export interface GroupCounts {
  variant: string | null;
  phase: AbPhase | null;
  byStatus: Record<string, number>;
  /** Distinct messages opened or clicked by anyone, and by people (not Apple's prefetch or a scanner). */
  opened: number;
  clicked: number;
  humanOpened: number;
  humanClicked: number;
  unsubscribed: number;
}

/**
 * A campaign's messages per group: statuses, and the distinct messages opened, clicked (by
 * anyone and by people) and unsubscribed from. An event recorded before engagement was
 * classified counts as a person's.
 */
export async function countCampaignGroups(db: Db, dialect: Dialect, campaignId: string): Promise<GroupCounts[]> {
  const statuses = await db
    .selectFrom('emails')
    .select(['variant', 'ab_phase', 'status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('campaign_id', '=', campaignId)
    .groupBy(['variant', 'ab_phase', 'status'])
    .execute();
  const machine = jsonTrue(dialect, 'events.data', 'is_machine');
  const events = await db
    .selectFrom('events')
    .innerJoin('emails', 'emails.id', 'events.email_id')
    .select([
      'emails.variant',
      'emails.ab_phase',
      'events.type',
      sql<number>`count(distinct events.email_id)`.as('n'),
      sql<number>`count(distinct case when ${machine} then null else events.email_id end)`.as('human'),
    ])
    .where('emails.campaign_id', '=', campaignId)
    .where('events.type', 'in', ['email.opened', 'email.clicked', 'subscriber.unsubscribed'])
    .groupBy(['emails.variant', 'emails.ab_phase', 'events.type'])
    .execute();
  const groups = new Map<string, GroupCounts>();
  const group = (variant: string | null, phase: AbPhase | null) => {
    const key = `${variant ?? ''} ${phase ?? ''}`;
    let g = groups.get(key);
    if (!g)
      groups.set(
        key,
        (g = { variant, phase, byStatus: {}, opened: 0, clicked: 0, humanOpened: 0, humanClicked: 0, unsubscribed: 0 }),
      );
    return g;
  };
  for (const s of statuses) group(s.variant, s.ab_phase).byStatus[s.status] = Number(s.n);
  for (const e of events) {
    const g = group(e.variant, e.ab_phase);
    if (e.type === 'email.opened') [g.opened, g.humanOpened] = [Number(e.n), Number(e.human)];
    else if (e.type === 'email.clicked') [g.clicked, g.humanClicked] = [Number(e.n), Number(e.human)];
    else g.unsubscribed = Number(e.n);
  }
  return [...groups.values()];
}
