import type { Db, Dialect } from './infra/db.js';
import { audienceRows, isMember, type Audience, type Membership } from './audience-membership.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import type { PropertyCondition } from './property-conditions.js';
import { subscriberRows, type Subscriber } from './subscribers.js';

export type { Audience, Membership } from './audience-membership.js';

export const saveAudience = async (db: Db, audience: Audience): Promise<void> => {
  await db.insertInto('audiences').values(audienceRows.encode(audience)).execute();
};

export const findAudience = async (db: Db, workspaceId: string, id: string): Promise<Audience | undefined> => {
  const row = await db
    .selectFrom('audiences')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && audienceRows.decode(row);
};

export const listAudiences = async (db: Db, workspaceId: string, page: ListPage): Promise<PageOf<Audience>> =>
  audienceRows.decodePage(
    await readPage(
      db.selectFrom('audiences').selectAll('audiences').where('workspace_id', '=', workspaceId),
      'audiences.id',
      page,
    ),
  );

/** Audiences of the workspace that have conditions (a contact may meet them without being added). */
export const listConditionalAudiences = async (db: Db, workspaceId: string): Promise<Audience[]> =>
  audienceRows.decodeAll(
    await db
      .selectFrom('audiences')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('conditions', 'is not', null)
      .execute(),
  );

export const updateAudienceConditions = async (
  db: Db,
  id: string,
  conditions: PropertyCondition[] | null,
): Promise<void> => {
  await db.updateTable('audiences').set(audienceRows.encode({ conditions })).where('id', '=', id).execute();
};

export const renameAudience = async (db: Db, id: string, name: string): Promise<void> => {
  await db.updateTable('audiences').set({ name }).where('id', '=', id).execute();
};

/** The audiences a subscriber is a member of, newest first: added to, or among `meeting` (whose conditions it meets). */
const audiencesOf = (db: Db, workspaceId: string, subscriberId: string, meeting: readonly string[]) =>
  db
    .selectFrom('audiences')
    .where('audiences.workspace_id', '=', workspaceId)
    .where((eb) =>
      eb.or([
        eb.exists(
          eb
            .selectFrom('audience_members')
            .select('audience_members.subscriber_id')
            .whereRef('audience_members.audience_id', '=', 'audiences.id')
            .where('audience_members.subscriber_id', '=', subscriberId),
        ),
        ...(meeting.length > 0 ? [eb('audiences.id', 'in', [...meeting])] : []),
      ]),
    );

export const listAudiencesOf = async (
  db: Db,
  workspaceId: string,
  subscriberId: string,
  meeting: readonly string[],
  page: ListPage,
): Promise<PageOf<Audience>> =>
  audienceRows.decodePage(
    await readPage(audiencesOf(db, workspaceId, subscriberId, meeting).selectAll('audiences'), 'audiences.id', page),
  );

export const countAudiencesOf = async (
  db: Db,
  workspaceId: string,
  subscriberId: string,
  meeting: readonly string[],
): Promise<number> =>
  Number(
    (
      await audiencesOf(db, workspaceId, subscriberId, meeting)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

export const countAudiences = async (db: Db, workspaceId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('audiences')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

/** Members: added ones are counted from the membership index; with conditions, the workspace's subscribers are read. */
export async function countMembers(
  db: Db,
  dialect: Dialect,
  audience: Membership & { workspace_id: string },
): Promise<number> {
  const q =
    audience.conditions === null
      ? db
          .selectFrom('audience_members')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('audience_id', '=', audience.id)
      : db
          .selectFrom('subscribers')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('subscribers.workspace_id', '=', audience.workspace_id)
          .where((eb) => isMember(eb, dialect, audience));
  return Number((await q.executeTakeFirstOrThrow()).n);
}

export const removeAudience = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number(
    (await db.deleteFrom('audiences').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst())
      .numDeletedRows,
  ) > 0;

/** Adds members, ignoring those already in; returns how many were new. */
export async function saveMembers(
  db: Db,
  audienceId: string,
  subscriberIds: readonly string[],
  at: number,
): Promise<number> {
  if (subscriberIds.length === 0) return 0;
  const result = await db
    .insertInto('audience_members')
    .values(
      [...new Set(subscriberIds)].map((subscriber_id) => ({ audience_id: audienceId, subscriber_id, created_at: at })),
    )
    .onConflict((oc) => oc.columns(['audience_id', 'subscriber_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

export const findMember = async (
  db: Db,
  dialect: Dialect,
  audience: Membership,
  subscriberId: string,
): Promise<boolean> =>
  (await db
    .selectFrom('subscribers')
    .select('subscribers.id')
    .where('subscribers.id', '=', subscriberId)
    .where((eb) => isMember(eb, dialect, audience))
    .executeTakeFirst()) !== undefined;

export const removeMember = async (db: Db, audienceId: string, subscriberId: string): Promise<boolean> =>
  Number(
    (
      await db
        .deleteFrom('audience_members')
        .where('audience_id', '=', audienceId)
        .where('subscriber_id', '=', subscriberId)
        .executeTakeFirst()
    ).numDeletedRows,
  ) > 0;

export const listMembers = async (
  db: Db,
  dialect: Dialect,
  audience: Membership & { workspace_id: string },
  page: ListPage,
): Promise<PageOf<Subscriber>> =>
  subscriberRows.decodePage(
    await readPage(
      audience.conditions === null
        ? db
            .selectFrom('subscribers')
            .innerJoin('audience_members', 'audience_members.subscriber_id', 'subscribers.id')
            .selectAll('subscribers')
            .where('audience_members.audience_id', '=', audience.id)
        : db
            .selectFrom('subscribers')
            .selectAll('subscribers')
            .where('subscribers.workspace_id', '=', audience.workspace_id)
            .where((eb) => isMember(eb, dialect, audience)),
      'subscribers.id',
      page,
    ),
  );
