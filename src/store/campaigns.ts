import type { Selectable } from 'kysely';
import type { Db, Dialect } from './infra/db.js';
import { claimRows, unleased, type Lease } from './lease.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { flag, jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { CampaignsTable, GroupCuts } from './tables/campaigns.js';

export {
  CAMPAIGN_STATUSES,
  WINNER_METRICS,
  type GroupCuts,
  type CampaignStatus,
  type WinnerChoice,
  type WinnerMetric,
} from './tables/campaigns.js';

export const campaignRows = rowCodec<Selectable<CampaignsTable>>()({
  reply_to: jsonOrNull<string[]>(),
  tags: jsonOrNull<string[]>(),
  variables: jsonOrNull<Record<string, unknown>>(),
  metadata: jsonOrNull<Record<string, unknown>>(),
  test: flag,
  group_cuts: jsonOrNull<GroupCuts>(),
});
/** A campaign (Resend's broadcast): its content, who it goes to, how far queuing got, its A/B test. */
export type Campaign = EntityOf<typeof campaignRows>;

export const saveCampaign = async (db: Db, campaign: Campaign): Promise<void> => {
  await db.insertInto('campaigns').values(campaignRows.encode(campaign)).execute();
};

export const findCampaign = async (db: Db, workspaceId: string, id: string): Promise<Campaign | undefined> => {
  const row = await db
    .selectFrom('campaigns')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && campaignRows.decode(row);
};

export const findCampaignById = async (db: Db, id: string): Promise<Campaign | undefined> => {
  const row = await db.selectFrom('campaigns').selectAll().where('id', '=', id).executeTakeFirst();
  return row && campaignRows.decode(row);
};

export const listCampaigns = async (db: Db, workspaceId: string, page: ListPage): Promise<PageOf<Campaign>> =>
  campaignRows.decodePage(
    await readPage(db.selectFrom('campaigns').selectAll().where('workspace_id', '=', workspaceId), 'id', page),
  );

export const countCampaigns = async (db: Db, workspaceId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('campaigns')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

/** Takes one campaign being queued whose time has come and that nobody holds (or whose holder's lease ran out: it died). */
export async function claimQueuingCampaign(db: Db, dialect: Dialect, lease: Lease): Promise<Campaign | undefined> {
  const pick = db
    .selectFrom('campaigns')
    .select('id')
    .where('status', '=', 'queuing')
    .where((eb) => eb.or([eb('scheduled_at', 'is', null), eb('scheduled_at', '<=', lease.now)]))
    .where(unleased(lease.now))
    .orderBy('created_at')
    .limit(1);
  const [row] = await claimRows(db, dialect, 'campaigns', lease, pick);
  return row && campaignRows.decode(row);
}

/** Keeps where the campaign's recipients are cut into groups, only while `owner` holds it and before anything was queued. */
export async function saveGroupCuts(db: Db, id: string, owner: string, cuts: GroupCuts): Promise<boolean> {
  const result = await db
    .updateTable('campaigns')
    .set({ group_cuts: JSON.stringify(cuts) })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where('status', '=', 'queuing')
    .where('group_cuts', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Records a queued page, only while `owner` still holds the campaign (the worker kernel renews the lease). */
export async function advanceCampaign(
  db: Db,
  id: string,
  owner: string,
  cursor: string,
  added: number,
): Promise<boolean> {
  const result = await db
    .updateTable('campaigns')
    .set((eb) => ({ cursor, queued: eb('queued', '+', added) }))
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where('status', '=', 'queuing')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Every recipient is queued: the campaign is sending, or, an A/B test's variants queued, waits for its winner until `winnerDueAt`. */
export async function finishQueuingCampaign(
  db: Db,
  id: string,
  owner: string,
  now: number,
  winnerDueAt: number | null,
): Promise<boolean> {
  const result = await db
    .updateTable('campaigns')
    .set(
      winnerDueAt === null
        ? { status: 'sending', queued_at: now, lease_owner: null, lease_until: null }
        : { status: 'testing', winner_due_at: winnerDueAt, lease_owner: null, lease_until: null },
    )
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where('status', '=', 'queuing')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

const changed = (result: { numUpdatedRows: bigint } | { numDeletedRows: bigint }): boolean =>
  Number('numUpdatedRows' in result ? result.numUpdatedRows : result.numDeletedRows) > 0;

/** Changes a campaign only while it is a draft (compare-and-set: a draft being sent is not). */
export const updateDraftCampaign = async (
  db: Db,
  id: string,
  changes: Partial<Omit<Campaign, 'id'>>,
): Promise<boolean> =>
  changed(
    await db
      .updateTable('campaigns')
      .set(campaignRows.encode(changes))
      .where('id', '=', id)
      .where('status', '=', 'draft')
      .executeTakeFirst(),
  );

/** A draft starts: queued by the campaign workers from `scheduled_at` (null: now). */
export const startDraftCampaign = (
  db: Db,
  id: string,
  fields: Pick<Campaign, 'scheduled_at' | 'recipients' | 'test' | 'updated_at'>,
): Promise<boolean> => updateDraftCampaign(db, id, { ...fields, status: 'queuing' });

/** A scheduled campaign no node has started goes back to draft. */
export const unscheduleCampaign = async (db: Db, id: string, now: number): Promise<boolean> =>
  changed(
    await db
      .updateTable('campaigns')
      .set({ status: 'draft', scheduled_at: null, recipients: 0, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', 'queuing')
      .where('cursor', 'is', null)
      .where('lease_owner', 'is', null)
      .where('scheduled_at', '>', now)
      .executeTakeFirst(),
  );

/** Deletes a draft, or a scheduled campaign no node has started. */
export const removeUnstartedCampaign = async (db: Db, id: string): Promise<boolean> =>
  changed(
    await db
      .deleteFrom('campaigns')
      .where('id', '=', id)
      .where((eb) =>
        eb.or([
          eb('status', '=', 'draft'),
          eb.and([eb('status', '=', 'queuing'), eb('cursor', 'is', null), eb('lease_owner', 'is', null)]),
        ]),
      )
      .executeTakeFirst(),
  );

/** Stops a campaign being queued or sent; false when it finished (or was cancelled) first. */
export const markCampaignCancelled = async (db: Db, id: string, now: number): Promise<boolean> =>
  changed(
    await db
      .updateTable('campaigns')
      .set({ status: 'cancelled', cancelled_at: now, updated_at: now, lease_owner: null, lease_until: null })
      .where('id', '=', id)
      .where('status', 'in', ['queuing', 'testing', 'sending'])
      .executeTakeFirst(),
  );

/**
 * Cancels a campaign's messages no worker holds (queued or deferred). Campaign messages have
 * one recipient each, so the message is cancelled with its queue item.
 */
export async function cancelCampaignMessages(trx: Db, campaignId: string, now: number): Promise<number> {
  const ofCampaign = trx.selectFrom('emails').select('id').where('campaign_id', '=', campaignId);
  const result = await trx
    .updateTable('queue_items')
    .set({ status: 'cancelled', finished_at: now, updated_at: now, lease_owner: null, lease_until: null })
    .where('email_id', 'in', ofCampaign)
    .where('status', 'in', ['queued', 'deferred'])
    .executeTakeFirst();
  await trx
    .updateTable('emails')
    .set({ status: 'cancelled', updated_at: now })
    .where('campaign_id', '=', campaignId)
    .where('status', 'in', ['queued', 'scheduled', 'deferred'])
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('queue_items')
            .select('id')
            .whereRef('queue_items.email_id', '=', 'emails.id')
            .where('queue_items.status', '<>', 'cancelled'),
        ),
      ),
    )
    .execute();
  return Number(result.numUpdatedRows);
}

export const listSendingCampaigns = async (db: Db, limit: number): Promise<Campaign[]> =>
  campaignRows.decodeAll(
    await db
      .selectFrom('campaigns')
      .selectAll()
      .where('status', '=', 'sending')
      .orderBy('queued_at')
      .limit(limit)
      .execute(),
  );

/** Marks a campaign sent; false when another node did it first (it emits campaign.sent then). */
export async function markCampaignSent(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('campaigns')
    .set({ status: 'sent', sent_at: now })
    .where('id', '=', id)
    .where('status', '=', 'sending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Campaign messages not yet final (queued, scheduled, sending, deferred). */
export const countUnfinished = async (db: Db, campaignId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('emails')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('campaign_id', '=', campaignId)
        .where('status', 'in', ['queued', 'scheduled', 'sending', 'deferred'])
        .executeTakeFirstOrThrow()
    ).n,
  );
