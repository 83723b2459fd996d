import { sql, type Selectable } from 'kysely';
import type { Db, Dialect } from './infra/db.js';
import { aggregateStatus, PRECEDENCE } from './email-status.js';
import { flag, json, jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { DeliveryAttemptsTable, EmailsTable, QueueItemsTable } from './tables/emails.js';

export {
  EMAIL_STATUSES,
  FINAL_QUEUE_STATUSES,
  PRIORITY,
  QUEUE_STATUSES,
  type AbPhase,
  type AttemptOutcome,
  type EmailStatus,
  type EmailType,
  type Intake,
  type QueueStatus,
} from './tables/emails.js';

export const emailRows = rowCodec<Selectable<EmailsTable>>()({
  test: flag,
  to_addresses: json<string[]>(),
  cc_addresses: jsonOrNull<string[]>(),
  bcc_addresses: jsonOrNull<string[]>(),
  reply_to: jsonOrNull<string[]>(),
  tags: jsonOrNull<string[]>(),
  metadata: jsonOrNull<Record<string, unknown>>(),
  track_opens: flag,
  track_clicks: flag,
});
/** An email: its addresses as mailboxes (`"Name" <address>`), tags, metadata. */
export type Email = EntityOf<typeof emailRows>;

export const queueItemRows = rowCodec<Selectable<QueueItemsTable>>()({ test: flag });
/** One recipient of an email: its place in the delivery queue. */
export type QueueItem = EntityOf<typeof queueItemRows>;

export const deliveryAttemptRows = rowCodec<Selectable<DeliveryAttemptsTable>>()({ tls: flag });
/** One SMTP transaction's outcome for one recipient. */
export type DeliveryAttempt = EntityOf<typeof deliveryAttemptRows>;

export interface NewEmail {
  email: Email;
  /** Absent for messages composed at delivery time (campaigns). */
  raw?: Buffer | undefined;
  recipients: QueueItem[];
}

/** Writes an email, its content and its queue items; call inside the caller's transaction. */
export async function saveEmail(trx: Db, { email, raw, recipients }: NewEmail): Promise<void> {
  await trx.insertInto('emails').values(emailRows.encode(email)).execute();
  if (raw) await trx.insertInto('email_contents').values({ email_id: email.id, raw }).execute();
  if (recipients.length > 0) await trx.insertInto('queue_items').values(recipients.map(queueItemRows.encode)).execute();
}

/** Writes many emails at once with multi-row inserts (campaign pages). */
/** Bytes of messages per insert (a larger message goes alone). */
const CONTENT_BYTES = 32 * 1024 * 1024;

export async function saveEmails(trx: Db, emails: readonly NewEmail[]): Promise<void> {
  // Rows per statement: well under SQLite's (32,766) and PostgreSQL's (65,535) limits on bound
  // parameters, at about 40 columns an email and 20 a queue row.
  const EMAILS = 300;
  const ITEMS = 1000;
  for (let i = 0; i < emails.length; i += EMAILS) {
    const chunk = emails.slice(i, i + EMAILS);
    await trx
      .insertInto('emails')
      .values(chunk.map((e) => emailRows.encode(e.email)))
      .execute();
  }
  // Messages by size too: one statement must stay far below PostgreSQL's 1 GB per message, and
  // a commit can hold the messages of hundreds of requests, each up to the size limit.
  let contents: Array<{ email_id: string; raw: Buffer }> = [];
  let bytes = 0;
  const flush = async () => {
    if (contents.length > 0) await trx.insertInto('email_contents').values(contents).execute();
    contents = [];
    bytes = 0;
  };
  for (const e of emails) {
    if (!e.raw) continue;
    if (contents.length >= EMAILS || (contents.length > 0 && bytes + e.raw.length > CONTENT_BYTES)) await flush();
    contents.push({ email_id: e.email.id, raw: e.raw });
    bytes += e.raw.length;
  }
  await flush();
  const items = emails.flatMap((e) => e.recipients.map(queueItemRows.encode));
  for (let i = 0; i < items.length; i += ITEMS)
    await trx
      .insertInto('queue_items')
      .values(items.slice(i, i + ITEMS))
      .execute();
}

/**
 * Stores content composed after queueing (at delivery); the first writer wins. Returns what
 * is stored: `raw`, or what another node stored first.
 */
export async function saveEmailContent(db: Db, emailId: string, raw: Buffer): Promise<Buffer> {
  const inserted = await db
    .insertInto('email_contents')
    .values({ email_id: emailId, raw })
    .onConflict((oc) => oc.column('email_id').doNothing())
    .returning('email_id')
    .execute();
  if (inserted.length === 0) return (await findEmailContent(db, emailId)) ?? raw;
  await db.updateTable('emails').set({ size: raw.length }).where('id', '=', emailId).execute();
  return raw;
}

export const findEmail = async (db: Db, workspaceId: string, id: string): Promise<Email | undefined> => {
  const row = await db
    .selectFrom('emails')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && emailRows.decode(row);
};

export const findEmailById = async (db: Db, id: string): Promise<Email | undefined> => {
  const row = await db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirst();
  return row && emailRows.decode(row);
};

export async function findEmailContent(db: Db, emailId: string): Promise<Buffer | undefined> {
  const row = await db.selectFrom('email_contents').select('raw').where('email_id', '=', emailId).executeTakeFirst();
  return row ? Buffer.from(row.raw) : undefined;
}

interface EmailListQuery {
  workspaceId: string;
  limit: number;
  /** Older than this id (ids are UUIDv7, so they sort by creation time). */
  after?: string | undefined;
  /** Newer than this id. */
  before?: string | undefined;
  status?: string | undefined;
  /** Part of a To address, matched without regard to case. */
  to?: string | undefined;
  /** Part of the subject, the From or a To address, without regard to case; or an email id. */
  search?: string | undefined;
  /** A tag (`name:value`), or a tag name (any value). */
  tag?: string | undefined;
  /** Created at or after, epoch ms. */
  createdFrom?: number | undefined;
  /** Created before, epoch ms. */
  createdUntil?: number | undefined;
  campaignId?: string | undefined;
  subscriberId?: string | undefined;
}

/** A LIKE pattern for text anywhere in a column, with the wildcards of `text` taken literally. */
const containing = (text: string): string => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Keyset page of emails, newest first. With `before`, the page is the `limit` emails just
 * newer than the cursor, still returned newest first. Fetches one extra row to know whether
 * more exist in the direction of travel.
 */
export async function listEmails(db: Db, q: EmailListQuery): Promise<{ rows: Email[]; more: boolean }> {
  let query = db.selectFrom('emails').selectAll().where('workspace_id', '=', q.workspaceId);
  if (q.status) query = query.where('status', '=', q.status as Email['status']);
  if (q.to) query = query.where(sql<boolean>`lower(to_addresses) like ${containing(q.to)} escape '\\'`);
  if (q.search) {
    const pattern = containing(q.search);
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(q.search)
      ? q.search.toLowerCase()
      : null;
    query = query.where((eb) =>
      eb.or([
        ...(uuid ? [eb('id', '=', uuid)] : []),
        sql<boolean>`lower(subject) like ${pattern} escape '\\'`,
        sql<boolean>`lower(from_header) like ${pattern} escape '\\'`,
        sql<boolean>`lower(to_addresses) like ${pattern} escape '\\'`,
      ]),
    );
  }
  if (q.tag) {
    // Tags are stored as a JSON array of strings: the tag itself, or any value of a tag name.
    const quoted = JSON.stringify(q.tag)
      .slice(0, -1)
      .replace(/[\\%_]/g, (c) => `\\${c}`);
    query = query.where((eb) =>
      eb.or([
        sql<boolean>`tags like ${`%${quoted}"%`} escape '\\'`,
        sql<boolean>`tags like ${`%${quoted}:%`} escape '\\'`,
      ]),
    );
  }
  if (q.campaignId !== undefined) query = query.where('campaign_id', '=', q.campaignId);
  if (q.subscriberId !== undefined) query = query.where('subscriber_id', '=', q.subscriberId);
  if (q.createdFrom !== undefined) query = query.where('created_at', '>=', q.createdFrom);
  if (q.createdUntil !== undefined) query = query.where('created_at', '<', q.createdUntil);
  if (q.before !== undefined) {
    const rows = await query
      .where('id', '>', q.before)
      .orderBy('id', 'asc')
      .limit(q.limit + 1)
      .execute();
    return { rows: emailRows.decodeAll(rows.slice(0, q.limit).reverse()), more: rows.length > q.limit };
  }
  if (q.after !== undefined) query = query.where('id', '<', q.after);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(q.limit + 1)
    .execute();
  return { rows: emailRows.decodeAll(rows.slice(0, q.limit)), more: rows.length > q.limit };
}

/**
 * Makes the caller's transaction the only one acting on this email until it commits: judging
 * a click against the clicks before it needs to see them all. SQLite runs one transaction at
 * a time already; PostgreSQL locks the email's row.
 */
export async function lockEmail(trx: Db, dialect: Dialect, emailId: string): Promise<void> {
  if (dialect === 'postgres')
    await trx.selectFrom('emails').select('id').where('id', '=', emailId).forUpdate().execute();
}

export const listQueueItemsOfEmail = async (db: Db, emailId: string): Promise<QueueItem[]> =>
  queueItemRows.decodeAll(
    await db.selectFrom('queue_items').selectAll().where('email_id', '=', emailId).orderBy('id').execute(),
  );

export const listAttemptsOfEmail = async (db: Db, emailId: string): Promise<DeliveryAttempt[]> =>
  deliveryAttemptRows.decodeAll(
    await db
      .selectFrom('delivery_attempts')
      .selectAll()
      .where('email_id', '=', emailId)
      .orderBy('started_at')
      .orderBy('id')
      .execute(),
  );

/** Recomputes an email's status from its queue items; call after changing any of them. */
export async function refreshEmailStatus(trx: Db, emailId: string, now: number): Promise<Email['status']> {
  const items = await trx.selectFrom('queue_items').select('status').where('email_id', '=', emailId).execute();
  const email = await trx.selectFrom('emails').select(['scheduled_at']).where('id', '=', emailId).executeTakeFirst();
  const status = aggregateStatus(
    items.map((i) => i.status),
    email?.scheduled_at != null && email.scheduled_at > now,
  );
  await trx.updateTable('emails').set({ status, updated_at: now }).where('id', '=', emailId).execute();
  return status;
}

/**
 * Moves a scheduled email to `at` (null: due now). Only while it is scheduled and no recipient
 * has been handed to a worker; false otherwise.
 */
export async function rescheduleEmail(trx: Db, emailId: string, at: number | null, now: number): Promise<boolean> {
  const email = await trx.selectFrom('emails').select(['status']).where('id', '=', emailId).executeTakeFirst();
  if (email?.status !== 'scheduled') return false;
  const items = await trx
    .updateTable('queue_items')
    .set({ next_attempt_at: at ?? now, updated_at: now })
    .where('email_id', '=', emailId)
    .where('status', '=', 'queued')
    .where('attempts', '=', 0)
    .executeTakeFirst();
  if (Number(items.numUpdatedRows) === 0) return false;
  await trx
    .updateTable('emails')
    .set({ scheduled_at: at, status: at === null ? 'queued' : 'scheduled', updated_at: now })
    .where('id', '=', emailId)
    .execute();
  return true;
}

/**
 * `refreshEmailStatus` for many emails, in one statement per 500 emails whatever their number
 * (delivery writes a batch of results at once; on PostgreSQL each statement is a round trip):
 * aggregateStatus's rule as SQL, over each email's queue rows.
 */
export async function refreshEmailStatuses(trx: Db, emailIds: readonly string[], now: number): Promise<void> {
  const ids = [...new Set(emailIds)];
  const has = (s: (typeof PRECEDENCE)[number]) => sql`max(case when q.status = ${sql.lit(s)} then 1 else 0 end) = 1`;
  const status = sql.join(
    PRECEDENCE.map((s) =>
      s === 'queued'
        ? sql`when ${has(s)} then case when e.scheduled_at is not null and e.scheduled_at > ${now} then 'scheduled' else 'queued' end`
        : sql`when ${has(s)} then ${sql.lit(s)}`,
    ),
    sql` `,
  );
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    await sql`
      update emails set status = s.status, updated_at = ${now}
      from (
        select e.id, case ${status} else 'failed' end as status
        from emails as e left join queue_items as q on q.email_id = e.id
        where e.id in (${sql.join(chunk)})
        group by e.id, e.scheduled_at
      ) as s
      where emails.id = s.id`.execute(trx);
  }
}

/** The stored messages of several emails (campaign messages not composed yet have none). */
export async function listEmailContents(db: Db, emailIds: readonly string[]): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (emailIds.length === 0) return out;
  const rows = await db
    .selectFrom('email_contents')
    .select(['email_id', 'raw'])
    .where('email_id', 'in', [...emailIds])
    .execute();
  for (const row of rows) out.set(row.email_id, Buffer.from(row.raw));
  return out;
}

/** Cancels recipients no worker holds (queued, deferred or held); returns how many. */
export async function cancelQueuedItems(trx: Db, emailId: string, now: number): Promise<number> {
  const result = await trx
    .updateTable('queue_items')
    .set({ status: 'cancelled', finished_at: now, updated_at: now, lease_owner: null, lease_until: null })
    .where('email_id', '=', emailId)
    .where('status', 'in', ['queued', 'deferred', 'held'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
export const listEmailsByIds = async (db: Db, ids: readonly string[]): Promise<Email[]> =>
  ids.length === 0
    ? []
    : emailRows.decodeAll(
        await db
          .selectFrom('emails')
          .selectAll()
          .where('id', 'in', [...ids])
          .execute(),
      );

/** The email that went out with this Message-ID (with angle brackets), if it was ours. */
export const findEmailByMessageId = async (db: Db, messageId: string): Promise<Email | undefined> => {
  const row = await db
    .selectFrom('emails')
    .selectAll()
    .where('message_id', '=', messageId)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return row && emailRows.decode(row);
};

/**
 * A workspace's emails sent with any of these Message-IDs. The workspace is checked here, not
 * in SQL: with it in the WHERE clause, SQLite and PostgreSQL may pick the workspace index and
 * scan every email of a big workspace; the message_id index finds the few rows directly.
 */
export async function listEmailsByMessageIds(
  db: Db,
  workspaceId: string,
  messageIds: readonly string[],
): Promise<Email[]> {
  if (messageIds.length === 0) return [];
  const rows = await db
    .selectFrom('emails')
    .selectAll()
    .where('message_id', 'in', [...messageIds])
    .execute();
  return emailRows.decodeAll(rows.filter((e) => e.workspace_id === workspaceId));
}

/** How many of a subscriber's emails are in each status, and how many were opened, clicked or complained about. */
export async function countSubscriberEmails(
  db: Db,
  workspaceId: string,
  subscriberId: string,
): Promise<Record<string, number>> {
  const [statuses, engaged] = await Promise.all([
    db
      .selectFrom('emails')
      .select((eb) => ['status', eb.fn.countAll<number | string>().as('n')])
      .where('subscriber_id', '=', subscriberId)
      .where('workspace_id', '=', workspaceId)
      .groupBy('status')
      .execute(),
    db
      .selectFrom('events as e')
      .innerJoin('emails as m', 'm.id', 'e.email_id')
      .select((eb) => ['e.type', eb.fn.count<number | string>('e.email_id').distinct().as('n')])
      .where('m.subscriber_id', '=', subscriberId)
      .where('m.workspace_id', '=', workspaceId)
      .where('e.type', 'in', ['email.opened', 'email.clicked', 'email.complained'])
      .groupBy('e.type')
      .execute(),
  ]);
  const counts: Record<string, number> = {};
  for (const r of statuses) counts[r.status] = Number(r.n);
  for (const r of engaged) counts[r.type.slice('email.'.length)] = Number(r.n);
  return counts;
}
