import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { Audience, Subscriber } from './tables.js';

export const saveAudience = async (db: Db, row: Audience): Promise<void> => {
  await db.insertInto('audiences').values(row).execute();
};

export const findAudience = (db: Db, workspaceId: string, id: string): Promise<Audience | undefined> =>
  db.selectFrom('audiences').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const listAudiences = (db: Db, workspaceId: string, page: ListPage) =>
  readPage(
    db
      .selectFrom('audiences')
      .selectAll('audiences')
      .select((eb) => eb.selectFrom('audience_members').select((e) => e.fn.countAll<number>().as('n')).whereRef('audience_members.audience_id', '=', 'audiences.id').as('member_count'))
      .where('workspace_id', '=', workspaceId),
    'audiences.id',
    page,
  );

export const renameAudience = async (db: Db, id: string, name: string): Promise<void> => {
  await db.updateTable('audiences').set({ name }).where('id', '=', id).execute();
};

/** The audiences a subscriber is a member of, newest first. */
const audiencesOf = (db: Db, workspaceId: string, subscriberId: string) =>
  db
    .selectFrom('audiences')
    .innerJoin('audience_members', 'audience_members.audience_id', 'audiences.id')
    .where('audiences.workspace_id', '=', workspaceId)
    .where('audience_members.subscriber_id', '=', subscriberId);

export const listAudiencesOf = (db: Db, workspaceId: string, subscriberId: string, page: ListPage): Promise<PageOf<Audience>> =>
  readPage(audiencesOf(db, workspaceId, subscriberId).selectAll('audiences'), 'audiences.id', page);

export const countAudiencesOf = async (db: Db, workspaceId: string, subscriberId: string): Promise<number> =>
  Number((await audiencesOf(db, workspaceId, subscriberId).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

export const countAudiences = async (db: Db, workspaceId: string): Promise<number> =>
  Number((await db.selectFrom('audiences').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow()).n);

export const countMembers = async (db: Db, audienceId: string): Promise<number> =>
  Number((await db.selectFrom('audience_members').select((eb) => eb.fn.countAll<number>().as('n')).where('audience_id', '=', audienceId).executeTakeFirstOrThrow()).n);

export const removeAudience = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number((await db.deleteFrom('audiences').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows) > 0;

/** Adds members, ignoring those already in; returns how many were new. */
export async function saveMembers(db: Db, audienceId: string, subscriberIds: readonly string[], at: number): Promise<number> {
  if (subscriberIds.length === 0) return 0;
  const result = await db
    .insertInto('audience_members')
    .values([...new Set(subscriberIds)].map((subscriber_id) => ({ audience_id: audienceId, subscriber_id, created_at: at })))
    .onConflict((oc) => oc.columns(['audience_id', 'subscriber_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

export const findMember = async (db: Db, audienceId: string, subscriberId: string): Promise<boolean> =>
  (await db.selectFrom('audience_members').select('subscriber_id').where('audience_id', '=', audienceId).where('subscriber_id', '=', subscriberId).executeTakeFirst()) !== undefined;

export const removeMember = async (db: Db, audienceId: string, subscriberId: string): Promise<boolean> =>
  Number((await db.deleteFrom('audience_members').where('audience_id', '=', audienceId).where('subscriber_id', '=', subscriberId).executeTakeFirst()).numDeletedRows) > 0;

export const listMembers = (db: Db, audienceId: string, page: ListPage): Promise<PageOf<Subscriber>> =>
  readPage(
    db.selectFrom('subscribers').innerJoin('audience_members', 'audience_members.subscriber_id', 'subscribers.id').selectAll('subscribers').where('audience_members.audience_id', '=', audienceId),
    'subscribers.id',
    page,
  );
