import { audienceRows, isMember, type Membership } from './audience-membership.js';
import type { Db, Dialect } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import type { ExpressionBuilder, Selectable } from 'kysely';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { Database } from './tables/database.js';
import type { SubscribersTable, SubscriberStatus } from './tables/subscribers.js';

export type { SubscriberStatus } from './tables/subscribers.js';

export const subscriberRows = rowCodec<Selectable<SubscribersTable>>()({
  metadata: jsonOrNull<Record<string, unknown>>(),
});
/** A contact; its metadata holds its properties. */
export type Subscriber = EntityOf<typeof subscriberRows>;

export interface SubscriberFilter {
  workspaceId: string;
  externalId?: string | undefined;
  status?: SubscriberStatus | undefined;
  tag?: string | undefined;
  email?: string | undefined;
}

const filtered = (db: Db, f: SubscriberFilter) => {
  let q = db.selectFrom('subscribers').where('subscribers.workspace_id', '=', f.workspaceId);
  if (f.externalId !== undefined) q = q.where('subscribers.external_id', '=', f.externalId);
  if (f.status !== undefined) q = q.where('subscribers.status', '=', f.status);
  if (f.email !== undefined) q = q.where('subscribers.email_key', '=', f.email.toLowerCase());
  if (f.tag !== undefined) {
    const tag = f.tag;
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('subscriber_tags')
          .select('tag')
          .whereRef('subscriber_tags.subscriber_id', '=', 'subscribers.id')
          .where('subscriber_tags.tag', '=', tag),
      ),
    );
  }
  return q;
};

export const listSubscribers = async (db: Db, f: SubscriberFilter, page: ListPage): Promise<PageOf<Subscriber>> =>
  subscriberRows.decodePage(await readPage(filtered(db, f).selectAll('subscribers'), 'subscribers.id', page));

export const countSubscribers = async (db: Db, f: SubscriberFilter): Promise<number> =>
  Number(
    (
      await filtered(db, f)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

export const findSubscriber = async (db: Db, workspaceId: string, id: string): Promise<Subscriber | undefined> => {
  const row = await db
    .selectFrom('subscribers')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && subscriberRows.decode(row);
};

export const findSubscriberByEmail = async (
  db: Db,
  workspaceId: string,
  email: string,
): Promise<Subscriber | undefined> => {
  const row = await db
    .selectFrom('subscribers')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('email_key', '=', email.toLowerCase())
    .executeTakeFirst();
  return row && subscriberRows.decode(row);
};

/** Rows per statement when many are read or written: well under both engines' parameter limits. */
const CHUNK = 500;

/** A workspace's subscribers of these lower-cased addresses (a contact import's batch). */
export async function listSubscribersByEmailKeys(
  db: Db,
  workspaceId: string,
  emailKeys: readonly string[],
): Promise<Subscriber[]> {
  const found: Subscriber[] = [];
  for (let i = 0; i < emailKeys.length; i += CHUNK) {
    const rows = await db
      .selectFrom('subscribers')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('email_key', 'in', emailKeys.slice(i, i + CHUNK))
      .execute();
    found.push(...subscriberRows.decodeAll(rows));
  }
  return found;
}

export const saveSubscriber = async (db: Db, subscriber: Subscriber): Promise<void> => {
  await db.insertInto('subscribers').values(subscriberRows.encode(subscriber)).execute();
};

/** Many new subscribers, with multi-row inserts (a contact import's batch). */
export async function saveSubscribers(db: Db, subscribers: readonly Subscriber[]): Promise<void> {
  for (let i = 0; i < subscribers.length; i += CHUNK)
    await db
      .insertInto('subscribers')
      .values(subscribers.slice(i, i + CHUNK).map(subscriberRows.encode))
      .execute();
}

export const updateSubscriber = async (db: Db, id: string, changes: Partial<Subscriber>): Promise<void> => {
  await db.updateTable('subscribers').set(subscriberRows.encode(changes)).where('id', '=', id).execute();
};

export const removeSubscriber = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number(
    (await db.deleteFrom('subscribers').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst())
      .numDeletedRows,
  ) > 0;

/** Replaces a subscriber's tags. */
export async function saveSubscriberTags(
  db: Db,
  subscriber: Pick<Subscriber, 'id' | 'workspace_id'>,
  tags: readonly string[],
): Promise<void> {
  await db.deleteFrom('subscriber_tags').where('subscriber_id', '=', subscriber.id).execute();
  if (tags.length > 0) {
    await db
      .insertInto('subscriber_tags')
      .values(
        [...new Set(tags)].map((tag) => ({ subscriber_id: subscriber.id, workspace_id: subscriber.workspace_id, tag })),
      )
      .execute();
  }
}

export async function listTagsOf(db: Db, subscriberIds: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (subscriberIds.length === 0) return out;
  const rows = await db
    .selectFrom('subscriber_tags')
    .select(['subscriber_id', 'tag'])
    .where('subscriber_id', 'in', [...subscriberIds])
    .orderBy('tag')
    .execute();
  for (const r of rows) out.set(r.subscriber_id, [...(out.get(r.subscriber_id) ?? []), r.tag]);
  return out;
}

/** Which of `tags` at least one subscriber of the workspace carries. */
export async function listKnownTags(db: Db, workspaceId: string, tags: readonly string[]): Promise<string[]> {
  if (tags.length === 0) return [];
  const rows = await db
    .selectFrom('subscriber_tags')
    .select('tag')
    .distinct()
    .where('workspace_id', '=', workspaceId)
    .where('tag', 'in', [...tags])
    .execute();
  return rows.map((r) => r.tag);
}

export interface AudienceSelection {
  workspaceId: string;
  /** Subscribers having any of these tags; all when empty. */
  tags: readonly string[];
  audienceId: string | null;
  /** Only subscribers in on this topic: opted in, or never asked when its default is opt_in. */
  topicId?: string | null | undefined;
}

/**
 * The subscribed subscribers a campaign goes to, minus exact-address suppressions, in id
 * order after `after`: the campaign queue walks it in pages.
 */
const selection = (db: Db, s: AudienceSelection, dialect: Dialect, audience: Membership | undefined) => {
  let q = db
    .selectFrom('subscribers')
    .where('subscribers.workspace_id', '=', s.workspaceId)
    .where('subscribers.status', '=', 'subscribed');
  if (s.tags.length > 0) {
    const tags = [...s.tags];
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('subscriber_tags')
          .select('tag')
          .whereRef('subscriber_tags.subscriber_id', '=', 'subscribers.id')
          .where('subscriber_tags.tag', 'in', tags),
      ),
    );
  }
  if (s.audienceId !== null) {
    // An audience deleted since (its campaigns keep the id) has no members.
    const members: Membership = audience ?? { id: s.audienceId, conditions: null };
    q = q.where((eb) => isMember(eb, dialect, members));
  }
  if (s.topicId) {
    const topicId = s.topicId;
    const choice = (eb: ExpressionBuilder<Database, 'subscribers'>) =>
      eb
        .selectFrom('subscriber_topics')
        .select('subscription')
        .whereRef('subscriber_topics.subscriber_id', '=', 'subscribers.id')
        .where('subscriber_topics.topic_id', '=', topicId);
    q = q.where((eb) =>
      eb.or([
        eb.exists(choice(eb).where('subscriber_topics.subscription', '=', 'opt_in')),
        eb.and([
          eb.not(eb.exists(choice(eb))),
          eb.exists(
            eb
              .selectFrom('topics')
              .select('id')
              .where('topics.id', '=', topicId)
              .where('topics.default_subscription', '=', 'opt_in'),
          ),
        ]),
      ]),
    );
  }
  return q.where((eb) =>
    eb.not(
      eb.exists(
        eb
          .selectFrom('suppressions')
          .select('address')
          .whereRef('suppressions.workspace_id', '=', 'subscribers.workspace_id')
          .whereRef('suppressions.address', '=', 'subscribers.email_key'),
      ),
    ),
  );
};

/** The audience of a selection, with its conditions on contact properties. */
const audienceOf = async (db: Db, s: AudienceSelection): Promise<Membership | undefined> => {
  const row =
    s.audienceId === null
      ? undefined
      : await db.selectFrom('audiences').select(['id', 'conditions']).where('id', '=', s.audienceId).executeTakeFirst();
  return row && audienceRows.decode(row);
};

export const countSelection = async (db: Db, s: AudienceSelection, dialect: Dialect): Promise<number> =>
  Number(
    (
      await selection(db, s, dialect, await audienceOf(db, s))
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

/** The ids of a selection after `after`, in id order: what cutting a campaign's groups needs, without the rows. */
export const listSelectionIds = async (
  db: Db,
  s: AudienceSelection,
  after: string | null,
  limit: number,
  dialect: Dialect,
): Promise<string[]> => {
  let q = selection(db, s, dialect, await audienceOf(db, s)).select('subscribers.id');
  if (after !== null) q = q.where('subscribers.id', '>', after);
  return (await q.orderBy('subscribers.id').limit(limit).execute()).map((r) => r.id);
};

export const listSelectionPage = async (
  db: Db,
  s: AudienceSelection,
  after: string | null,
  limit: number,
  dialect: Dialect,
): Promise<Subscriber[]> => {
  let q = selection(db, s, dialect, await audienceOf(db, s)).selectAll('subscribers');
  if (after !== null) q = q.where('subscribers.id', '>', after);
  return subscriberRows.decodeAll(await q.orderBy('subscribers.id').limit(limit).execute());
};
