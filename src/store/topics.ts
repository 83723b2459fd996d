import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import type { TopicsTable, TopicSubscription } from './tables/subscribers.js';

export type { TopicSubscription } from './tables/subscribers.js';

/** A subject contacts opt in to or out of (Resend's topics): every column is kept as it is read. */
export type Topic = Selectable<TopicsTable>;

export const saveTopic = async (db: Db, row: Topic): Promise<void> => {
  await db.insertInto('topics').values(row).execute();
};

export const findTopic = (db: Db, workspaceId: string, id: string): Promise<Topic | undefined> =>
  db.selectFrom('topics').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const listTopics = (db: Db, workspaceId: string): Promise<Topic[]> =>
  db.selectFrom('topics').selectAll().where('workspace_id', '=', workspaceId).orderBy('id', 'desc').execute();

export const updateTopic = async (db: Db, id: string, changes: Partial<Omit<Topic, 'id'>>): Promise<void> => {
  await db.updateTable('topics').set(changes).where('id', '=', id).execute();
};

export const removeTopic = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number(
    (await db.deleteFrom('topics').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst())
      .numDeletedRows,
  ) > 0;

/** Campaigns not finished (drafts, scheduled, being sent) that go to a topic's subscribers. */
export const countOpenCampaignsOf = async (db: Db, topicId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('campaigns')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('topic_id', '=', topicId)
        .where('status', 'in', ['draft', 'queuing', 'testing', 'sending'])
        .executeTakeFirstOrThrow()
    ).n,
  );

/** A subscriber's own choices (topics it never chose are absent). */
export const listSubscriptionsOf = (
  db: Db,
  subscriberId: string,
): Promise<Array<{ topic_id: string; subscription: TopicSubscription }>> =>
  db
    .selectFrom('subscriber_topics')
    .select(['topic_id', 'subscription'])
    .where('subscriber_id', '=', subscriberId)
    .execute();

/** Records a subscriber's choice for each topic given (replacing an earlier one). */
export async function saveSubscriptions(
  db: Db,
  subscriberId: string,
  choices: ReadonlyArray<{ topicId: string; subscription: TopicSubscription }>,
  at: number,
): Promise<void> {
  for (const choice of choices) {
    await db
      .insertInto('subscriber_topics')
      .values({
        subscriber_id: subscriberId,
        topic_id: choice.topicId,
        subscription: choice.subscription,
        updated_at: at,
      })
      .onConflict((oc) =>
        oc.columns(['subscriber_id', 'topic_id']).doUpdateSet({ subscription: choice.subscription, updated_at: at }),
      )
      .execute();
  }
}
