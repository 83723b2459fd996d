import { sql, type ExpressionBuilder, type Expression, type Selectable, type SqlBool } from 'kysely';
import { newId } from '../shared/ids.js';
import type { Db } from './infra/db.js';
import type { Dialect } from './infra/dialect.js';
import { claimRows, unleased, type Lease } from './lease.js';
import { readTimePage, type ListPage, type PageOf } from './infra/list-page.js';
import { flag, json, jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { Database } from './tables/database.js';
import { refuseDuplicate } from './infra/unique-violation.js';
import type {
  InboxAgentRunsTable,
  InboxAgentsTable,
  InboxDraftAttachmentsTable,
  InboxDraftsTable,
  InboxFolder,
  InboxLabelsTable,
  InboxMessagesTable,
  InboxThreadsTable,
} from './tables/inboxes.js';

export { INBOX_FOLDERS, type InboxAgentRunStatus, type InboxFolder } from './tables/inboxes.js';

const addresses = json<string[]>();

export type InboxThread = Selectable<InboxThreadsTable>;
export type InboxLabel = Selectable<InboxLabelsTable>;
export type InboxDraftAttachment = Selectable<InboxDraftAttachmentsTable>;

const messageRows = rowCodec<Selectable<InboxMessagesTable>>()({
  message_references: addresses,
  to_addresses: addresses,
  cc_addresses: addresses,
  bcc_addresses: addresses,
  reply_to: addresses,
  attachments: json<Array<{ id: string; filename: string | null; content_type: string; size: number }>>(),
  has_attachment: flag,
  read: flag,
});
/** A message of a thread, received or sent: its addresses and its attachments' descriptions. */
export type InboxMessage = EntityOf<typeof messageRows>;

const draftRows = rowCodec<Selectable<InboxDraftsTable>>()({
  to_addresses: jsonOrNull<string[]>(),
  cc_addresses: addresses,
  bcc_addresses: addresses,
});
/** A draft; `to_addresses` null until set. */
export type InboxDraft = EntityOf<typeof draftRows>;

/** What an inbox's agent may be allowed to do (the settings store the names). */
export const AGENT_ACTION_TYPES = [
  'draft_reply',
  'forward_thread',
  'add_labels',
  'assign_thread',
  'mark_as_spam',
  'archive',
  'move_to_trash',
] as const;
export type AgentActionType = (typeof AGENT_ACTION_TYPES)[number];

const agentRows = rowCodec<Selectable<InboxAgentsTable>>()({
  actions: json<AgentActionType[]>(),
  forward_to: addresses,
});
/** An inbox's agent settings; `actions` the names of the actions it may take, `forward_to` where else than the workspace's verified domains it may forward. */
export type InboxAgent = EntityOf<typeof agentRows>;

/** What the agent asked for (an action of inbox-agent/ask-agent.ts, with its fields) and what became of it. */
interface AgentActionRecord {
  type: string;
  result: string;
  detail?: string;
}

const agentRunRows = rowCodec<Selectable<InboxAgentRunsTable>>()({ actions: jsonOrNull<AgentActionRecord[]>() });
/** One run of the agent on a message; `actions` what it asked for and what became of each. */
export type InboxAgentRun = EntityOf<typeof agentRunRows>;

/**
 * The inbox side of receiving: threads, their messages, labels, drafts and agent settings.
 * Every read is scoped by the inbox (a receiving route), which is scoped by its workspace.
 */

// ---------------------------------------------------------------- threads and messages

/** The thread of this inbox holding one of these Message-IDs (the newest message wins). */
export async function findThreadIdByMessageIds(
  db: Db,
  inboxId: string,
  messageIds: readonly string[],
): Promise<string | undefined> {
  if (messageIds.length === 0) return undefined;
  const row = await db
    .selectFrom('inbox_messages')
    .select('thread_id')
    .where('inbox_id', '=', inboxId)
    .where('message_id', 'in', messageIds)
    .orderBy('at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.thread_id;
}

/** The newest thread of this inbox with this subject key where `address` took part, since `since`. */
export async function findThreadIdBySubject(
  db: Db,
  inboxId: string,
  subjectKey: string,
  address: string,
  since: number,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('inbox_threads')
    .innerJoin('inbox_messages', 'inbox_messages.thread_id', 'inbox_threads.id')
    .select('inbox_threads.id')
    .where('inbox_threads.inbox_id', '=', inboxId)
    .where('inbox_threads.subject_key', '=', subjectKey)
    .where('inbox_threads.last_message_at', '>=', since)
    .where((eb) =>
      eb.or([
        eb('inbox_messages.from_address', '=', address),
        eb('inbox_messages.participants', 'like', `%${escapeLike(address)}%`),
      ]),
    )
    .orderBy('inbox_threads.last_message_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

/** `%` cannot be in an address; `_` can, and as a pattern it still matches itself (and, harmlessly, any one character). */
const escapeLike = (value: string): string => value.replace(/%/g, '');

export const saveThread = async (db: Db, thread: InboxThread): Promise<void> => {
  await db.insertInto('inbox_threads').values(thread).execute();
};

export const saveInboxMessage = async (db: Db, message: InboxMessage): Promise<void> => {
  await db.insertInto('inbox_messages').values(messageRows.encode(message)).execute();
};

/** A new message in a thread: its time is the thread's, and a thread in one of `fromFolders` moves to `folder`. */
export async function touchThread(
  db: Db,
  threadId: string,
  at: number,
  folder: InboxFolder | undefined,
  fromFolders: InboxFolder[],
): Promise<void> {
  await db
    .updateTable('inbox_threads')
    .set((eb) => ({
      last_message_at: sql<number>`case when ${eb.ref('last_message_at')} > ${at} then ${eb.ref('last_message_at')} else ${at} end`,
      updated_at: at,
      ...(folder && fromFolders.length > 0
        ? { folder: eb.case().when('folder', 'in', fromFolders).then(folder).else(eb.ref('folder')).end() }
        : {}),
    }))
    .where('id', '=', threadId)
    .execute();
}

export const findThread = (db: Db, inboxId: string, id: string): Promise<InboxThread | undefined> =>
  db.selectFrom('inbox_threads').selectAll().where('inbox_id', '=', inboxId).where('id', '=', id).executeTakeFirst();

export async function updateThreadFolder(db: Db, threadId: string, folder: InboxFolder, now: number): Promise<void> {
  await db.updateTable('inbox_threads').set({ folder, updated_at: now }).where('id', '=', threadId).execute();
}

export async function setThreadRead(db: Db, threadId: string, read: boolean, now: number): Promise<void> {
  // Marking unread marks the newest message unread, as mail clients do; reading reads them all.
  if (read) {
    await db.updateTable('inbox_messages').set({ read: 1 }).where('thread_id', '=', threadId).execute();
  } else {
    const newest = await db
      .selectFrom('inbox_messages')
      .select('id')
      .where('thread_id', '=', threadId)
      .orderBy('at', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (newest) await db.updateTable('inbox_messages').set({ read: 0 }).where('id', '=', newest.id).execute();
  }
  await db.updateTable('inbox_threads').set({ updated_at: now }).where('id', '=', threadId).execute();
}

export async function removeThread(db: Db, threadId: string): Promise<void> {
  await db.deleteFrom('inbox_threads').where('id', '=', threadId).execute();
}

/** What narrows a list of threads: folders, labels, read state, and conditions on their messages. */
export interface ThreadFilter {
  inboxId: string;
  folders?: InboxFolder[] | undefined;
  labelIds?: string[] | undefined;
  read?: boolean | undefined;
  /** Search: a thread matches when one of its messages matches all of these. */
  search?: MessageSearch | undefined;
}

export interface MessageSearch {
  /** Words, all of which must appear in the subject, the participants or the text. */
  query?: string | undefined;
  from?: string[] | undefined;
  to?: string[] | undefined;
  cc?: string[] | undefined;
  bcc?: string[] | undefined;
  hasAttachment?: boolean | undefined;
  startDate?: number | undefined;
  endDate?: number | undefined;
}

/** The words of a query as an FTS5 expression: each word a quoted string, all required. */
export const ftsQuery = (query: string): string =>
  query
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => `"${w.replace(/"/g, '""')}"`)
    .join(' ');

/** A JSON array of addresses holding one of these, by its quoted form (`"a@b"`), without regard to case. */
function addressIn(
  eb: ExpressionBuilder<Database, 'inbox_messages'>,
  column: 'to_addresses' | 'cc_addresses' | 'bcc_addresses',
  addresses: string[],
): Expression<SqlBool> {
  return eb.or(
    addresses.map((a) => eb(eb.fn('lower', [eb.ref(column)]), 'like', `%"${escapeLike(a.toLowerCase())}"%`)),
  );
}

function messageConditions(dialect: Dialect, s: MessageSearch) {
  return (eb: ExpressionBuilder<Database, 'inbox_messages'>): Expression<SqlBool> => {
    const all: Expression<SqlBool>[] = [];
    const words = s.query?.trim();
    if (words) {
      all.push(
        dialect === 'postgres'
          ? sql<SqlBool>`${eb.ref('inbox_messages.id')} in (select id from inbox_messages where search @@ plainto_tsquery('simple', ${words}))`
          : sql<SqlBool>`inbox_messages.rowid in (select rowid from inbox_message_search where inbox_message_search match ${ftsQuery(words)})`,
      );
    }
    if (s.from?.length)
      all.push(eb.or(s.from.map((a) => eb(eb.fn('lower', [eb.ref('from_address')]), '=', a.toLowerCase()))));
    if (s.to?.length) all.push(addressIn(eb, 'to_addresses', s.to));
    if (s.cc?.length) all.push(addressIn(eb, 'cc_addresses', s.cc));
    if (s.bcc?.length) all.push(addressIn(eb, 'bcc_addresses', s.bcc));
    if (s.hasAttachment !== undefined) all.push(eb('has_attachment', '=', s.hasAttachment ? 1 : 0));
    if (s.startDate !== undefined) all.push(eb('at', '>=', s.startDate));
    if (s.endDate !== undefined) all.push(eb('at', '<=', s.endDate));
    return eb.and(all);
  };
}

/** One page of threads, latest activity first. */
export async function listThreadsPage(
  db: Db,
  dialect: Dialect,
  filter: ThreadFilter,
  page: ListPage,
): Promise<PageOf<InboxThread>> {
  let query = db
    .selectFrom('inbox_threads')
    .selectAll('inbox_threads')
    .where('inbox_threads.inbox_id', '=', filter.inboxId);
  if (filter.folders?.length) query = query.where('inbox_threads.folder', 'in', filter.folders);
  if (filter.labelIds?.length) {
    query = query.where('inbox_threads.id', 'in', (eb) =>
      eb.selectFrom('inbox_thread_labels').select('thread_id').where('label_id', 'in', filter.labelIds!),
    );
  }
  if (filter.read !== undefined) {
    const unread = (eb: ExpressionBuilder<Database, 'inbox_threads'>) =>
      eb.exists(
        eb
          .selectFrom('inbox_messages')
          .select('inbox_messages.id')
          .whereRef('inbox_messages.thread_id', '=', 'inbox_threads.id')
          .where('inbox_messages.read', '=', 0),
      );
    query = query.where((eb) => (filter.read ? eb.not(unread(eb)) : unread(eb)));
  }
  if (filter.search) {
    const conditions = messageConditions(dialect, filter.search);
    query = query.where('inbox_threads.id', 'in', (eb) =>
      eb
        .selectFrom('inbox_messages')
        .select('inbox_messages.thread_id')
        .where('inbox_messages.inbox_id', '=', filter.inboxId)
        .where(conditions),
    );
  }
  const cursor = page.before ?? page.after;
  const cursorTime = cursor
    ? (
        await db
          .selectFrom('inbox_threads')
          .select('last_message_at')
          .where('inbox_id', '=', filter.inboxId)
          .where('id', '=', cursor)
          .executeTakeFirst()
      )?.last_message_at
    : undefined;
  return readTimePage(query, { time: 'inbox_threads.last_message_at', key: 'inbox_threads.id' }, page, cursorTime);
}

/** The newest message of each thread matching the search. */
export async function findMatchedMessages(
  db: Db,
  dialect: Dialect,
  threadIds: string[],
  search: MessageSearch,
): Promise<Map<string, InboxMessage>> {
  if (threadIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('inbox_messages')
    .selectAll()
    .where('thread_id', 'in', threadIds)
    .where(messageConditions(dialect, search))
    .orderBy('at', 'desc')
    .execute();
  const out = new Map<string, InboxMessage>();
  for (const r of rows) if (!out.has(r.thread_id)) out.set(r.thread_id, messageRows.decode(r));
  return out;
}

/** Every message of these threads, oldest first: what a thread's summary is computed from. */
export const listMessagesOfThreads = async (db: Db, threadIds: string[]): Promise<InboxMessage[]> =>
  threadIds.length === 0
    ? []
    : messageRows.decodeAll(
        await db
          .selectFrom('inbox_messages')
          .selectAll()
          .where('thread_id', 'in', threadIds)
          .orderBy('at', 'asc')
          .orderBy('id', 'asc')
          .execute(),
      );

/** The threads among these with a draft not yet sent. */
export async function listThreadsWithDrafts(db: Db, threadIds: string[]): Promise<Set<string>> {
  if (threadIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('inbox_drafts')
    .select('thread_id')
    .where('thread_id', 'in', threadIds)
    .where('email_id', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.thread_id!));
}

/** One page of a thread's messages, oldest first (a conversation reads down). */
export async function listThreadMessagesPage(db: Db, threadId: string, page: ListPage): Promise<PageOf<InboxMessage>> {
  const base = db.selectFrom('inbox_messages').selectAll().where('thread_id', '=', threadId);
  const cursor = page.before ?? page.after;
  const at = cursor
    ? await base
        .where((eb) => eb.or([eb('received_email_id', '=', cursor), eb('email_id', '=', cursor)]))
        .executeTakeFirst()
    : undefined;
  if (cursor && !at) return { rows: [], more: false };
  if (page.before !== undefined) {
    const rows = await base
      .where((eb) => eb.or([eb('at', '<', at!.at), eb.and([eb('at', '=', at!.at), eb('id', '<', at!.id)])]))
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit + 1)
      .execute();
    return { rows: messageRows.decodeAll(rows.slice(0, page.limit).reverse()), more: rows.length > page.limit };
  }
  const from = at
    ? base.where((eb) => eb.or([eb('at', '>', at.at), eb.and([eb('at', '=', at.at), eb('id', '>', at.id)])]))
    : base;
  const rows = await from
    .orderBy('at', 'asc')
    .orderBy('id', 'asc')
    .limit(page.limit + 1)
    .offset(at ? 0 : page.offset)
    .execute();
  return { rows: messageRows.decodeAll(rows.slice(0, page.limit)), more: rows.length > page.limit };
}

/** A message of a thread by the id the API shows: its received email's or sent email's. */
export const findThreadMessage = async (
  db: Db,
  threadId: string,
  emailId: string,
): Promise<InboxMessage | undefined> => {
  const row = await db
    .selectFrom('inbox_messages')
    .selectAll()
    .where('thread_id', '=', threadId)
    .where((eb) => eb.or([eb('received_email_id', '=', emailId), eb('email_id', '=', emailId)]))
    .executeTakeFirst();
  return row && messageRows.decode(row);
};

/** Unread threads of each inbox: the inbox's `unread`. */
export async function countUnreadThreads(db: Db, inboxIds: string[]): Promise<Map<string, number>> {
  if (inboxIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('inbox_messages')
    .select(['inbox_id', (eb) => eb.fn.count<number>('thread_id').distinct().as('n')])
    .where('inbox_id', 'in', inboxIds)
    .where('read', '=', 0)
    .groupBy('inbox_id')
    .execute();
  return new Map(rows.map((r) => [r.inbox_id, Number(r.n)]));
}

// ---------------------------------------------------------------- labels

export const listLabels = (db: Db, inboxId: string): Promise<InboxLabel[]> =>
  db.selectFrom('inbox_labels').selectAll().where('inbox_id', '=', inboxId).orderBy('name').execute();

export const findLabel = (db: Db, inboxId: string, id: string): Promise<InboxLabel | undefined> =>
  db.selectFrom('inbox_labels').selectAll().where('inbox_id', '=', inboxId).where('id', '=', id).executeTakeFirst();

export const findLabelByName = (db: Db, inboxId: string, name: string): Promise<InboxLabel | undefined> =>
  db.selectFrom('inbox_labels').selectAll().where('inbox_id', '=', inboxId).where('name', '=', name).executeTakeFirst();

/** A label name the inbox has already is `already_exists` (two at once: the unique index decides). */
const refuseTakenName = (name: string | undefined, write: () => Promise<unknown>): Promise<void> =>
  refuseDuplicate(
    'inbox_labels',
    async () => {
      await write();
    },
    `name: the inbox already has a label named ${name}`,
    { field: 'name' },
  );

export const saveLabel = (db: Db, label: InboxLabel): Promise<void> =>
  refuseTakenName(label.name, () => db.insertInto('inbox_labels').values(label).execute());

export const updateLabel = (db: Db, id: string, changes: Partial<Pick<InboxLabel, 'name' | 'color'>>): Promise<void> =>
  refuseTakenName(changes.name, () => db.updateTable('inbox_labels').set(changes).where('id', '=', id).execute());

export async function removeLabel(db: Db, id: string): Promise<void> {
  await db.deleteFrom('inbox_labels').where('id', '=', id).execute();
}

/** The labels of each of these threads, by name. */
export async function listLabelsOfThreads(db: Db, threadIds: string[]): Promise<Map<string, InboxLabel[]>> {
  const out = new Map<string, InboxLabel[]>();
  if (threadIds.length === 0) return out;
  const rows = await db
    .selectFrom('inbox_thread_labels')
    .innerJoin('inbox_labels', 'inbox_labels.id', 'inbox_thread_labels.label_id')
    .selectAll('inbox_labels')
    .select('inbox_thread_labels.thread_id')
    .where('inbox_thread_labels.thread_id', 'in', threadIds)
    .orderBy('inbox_labels.name')
    .execute();
  for (const { thread_id, ...label } of rows) out.set(thread_id, [...(out.get(thread_id) ?? []), label]);
  return out;
}

/** Adds labels to a thread; those it already has stay as they are. */
export async function addThreadLabels(db: Db, threadId: string, labelIds: string[], now: number): Promise<void> {
  if (labelIds.length === 0) return;
  await db
    .insertInto('inbox_thread_labels')
    .values(labelIds.map((label_id) => ({ thread_id: threadId, label_id, created_at: now })))
    .onConflict((oc) => oc.columns(['thread_id', 'label_id']).doNothing())
    .execute();
}

export async function removeThreadLabels(db: Db, threadId: string, labelIds?: string[]): Promise<void> {
  let q = db.deleteFrom('inbox_thread_labels').where('thread_id', '=', threadId);
  if (labelIds) {
    if (labelIds.length === 0) return;
    q = q.where('label_id', 'in', labelIds);
  }
  await q.execute();
}

// ---------------------------------------------------------------- drafts

export const saveDraft = async (db: Db, draft: InboxDraft): Promise<void> => {
  await db.insertInto('inbox_drafts').values(draftRows.encode(draft)).execute();
};

export const findDraft = async (db: Db, inboxId: string, id: string): Promise<InboxDraft | undefined> => {
  const row = await db
    .selectFrom('inbox_drafts')
    .selectAll()
    .where('inbox_id', '=', inboxId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && draftRows.decode(row);
};

export async function updateDraft(
  db: Db,
  id: string,
  changes: Partial<Omit<InboxDraft, 'id' | 'workspace_id' | 'inbox_id' | 'created_at'>>,
): Promise<void> {
  await db.updateTable('inbox_drafts').set(draftRows.encode(changes)).where('id', '=', id).execute();
}

/** Records the email a draft became; false when another send took it first. */
export async function markDraftSent(db: Db, id: string, emailId: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('inbox_drafts')
    .set({ email_id: emailId, updated_at: now })
    .where('id', '=', id)
    .where('email_id', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function removeDraft(db: Db, id: string): Promise<void> {
  await db.deleteFrom('inbox_drafts').where('id', '=', id).execute();
}

/** Drafts not yet sent, last edited first. */
export async function listDraftsPage(db: Db, inboxId: string, page: ListPage): Promise<PageOf<InboxDraft>> {
  const query = db.selectFrom('inbox_drafts').selectAll().where('inbox_id', '=', inboxId).where('email_id', 'is', null);
  const cursor = page.before ?? page.after;
  const cursorTime = cursor
    ? (
        await db
          .selectFrom('inbox_drafts')
          .select('updated_at')
          .where('inbox_id', '=', inboxId)
          .where('id', '=', cursor)
          .executeTakeFirst()
      )?.updated_at
    : undefined;
  return draftRows.decodePage(await readTimePage(query, { time: 'updated_at', key: 'id' }, page, cursorTime));
}

export async function countOpenDrafts(db: Db, inboxIds: string[]): Promise<Map<string, number>> {
  if (inboxIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('inbox_drafts')
    .select(['inbox_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('inbox_id', 'in', inboxIds)
    .where('email_id', 'is', null)
    .groupBy('inbox_id')
    .execute();
  return new Map(rows.map((r) => [r.inbox_id, Number(r.n)]));
}

/** Attachments of drafts, without their bytes, in order. */
export async function listDraftAttachmentInfo(
  db: Db,
  draftIds: string[],
): Promise<Map<string, Array<Omit<InboxDraftAttachment, 'content'>>>> {
  const out = new Map<string, Array<Omit<InboxDraftAttachment, 'content'>>>();
  if (draftIds.length === 0) return out;
  const rows = await db
    .selectFrom('inbox_draft_attachments')
    .select(['id', 'draft_id', 'position', 'filename', 'content_type', 'size'])
    .where('draft_id', 'in', draftIds)
    .orderBy('position')
    .execute();
  for (const r of rows) out.set(r.draft_id, [...(out.get(r.draft_id) ?? []), r]);
  return out;
}

export const listDraftAttachments = (db: Db, draftId: string): Promise<InboxDraftAttachment[]> =>
  db.selectFrom('inbox_draft_attachments').selectAll().where('draft_id', '=', draftId).orderBy('position').execute();

/** Replaces every attachment of a draft. */
export async function replaceDraftAttachments(
  db: Db,
  draftId: string,
  attachments: InboxDraftAttachment[],
): Promise<void> {
  await db.deleteFrom('inbox_draft_attachments').where('draft_id', '=', draftId).execute();
  if (attachments.length > 0) await db.insertInto('inbox_draft_attachments').values(attachments).execute();
}

// ---------------------------------------------------------------- agent

export const findAgent = async (db: Db, inboxId: string): Promise<InboxAgent | undefined> => {
  const row = await db.selectFrom('inbox_agents').selectAll().where('inbox_id', '=', inboxId).executeTakeFirst();
  return row && agentRows.decode(row);
};

export async function saveAgent(db: Db, agent: InboxAgent): Promise<void> {
  const row = agentRows.encode(agent);
  await db
    .insertInto('inbox_agents')
    .values(row)
    .onConflict((oc) =>
      oc.column('inbox_id').doUpdateSet({
        instructions: row.instructions,
        tone: row.tone,
        actions: row.actions,
        forward_to: row.forward_to,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

// ---------------------------------------------------------------- agent runs

const saveAgentRun = async (db: Db, run: InboxAgentRun): Promise<void> => {
  await db.insertInto('inbox_agent_runs').values(agentRunRows.encode(run)).execute();
};

/**
 * A new message for the inbox's agent, when the inbox has one that may do something (at least
 * one action allowed): a run, written in the transaction that files the message.
 */
export async function queueAgentRun(
  trx: Db,
  m: { workspaceId: string; inboxId: string; threadId: string; messageId: string },
  now: number,
): Promise<void> {
  const agent = await findAgent(trx, m.inboxId);
  if (!agent || agent.actions.length === 0) return;
  await saveAgentRun(trx, {
    id: newId(),
    workspace_id: m.workspaceId,
    inbox_id: m.inboxId,
    thread_id: m.threadId,
    message_id: m.messageId,
    status: 'pending',
    attempts: 0,
    next_attempt_at: now,
    started_at: null,
    actions: null,
    error: null,
    created_at: now,
    updated_at: now,
    lease_owner: null,
    lease_until: null,
  });
}

/**
 * Takes up to `limit` runs that are due (pending, their time come) or were running on a node
 * whose lease ran out (it died mid-run), marking them running under the lease; oldest due first.
 */
export async function claimAgentRuns(db: Db, dialect: Dialect, lease: Lease, limit: number): Promise<InboxAgentRun[]> {
  const pick = db
    .selectFrom('inbox_agent_runs')
    .select('id')
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'pending'), eb('next_attempt_at', '<=', lease.now)]),
        eb('status', '=', 'running'),
      ]),
    )
    .where(unleased(lease.now))
    .orderBy('next_attempt_at')
    .limit(limit);
  const rows = await claimRows(db, dialect, 'inbox_agent_runs', lease, pick, {
    set: { status: 'running', started_at: lease.now, updated_at: lease.now },
  });
  return agentRunRows.decodeAll(rows);
}

/** Records a run's outcome and gives its lease back, only while `owner` holds it; false when another node took it over. */
export async function finishAgentRun(
  db: Db,
  id: string,
  owner: string,
  changes: Pick<InboxAgentRun, 'status' | 'attempts' | 'next_attempt_at' | 'actions' | 'error' | 'updated_at'>,
): Promise<boolean> {
  const result = await db
    .updateTable('inbox_agent_runs')
    .set({ ...agentRunRows.encode(changes), lease_owner: null, lease_until: null })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The agent's runs of each thread, oldest first. */
export async function listAgentRunsOfThreads(db: Db, threadIds: string[]): Promise<Map<string, InboxAgentRun[]>> {
  const out = new Map<string, InboxAgentRun[]>();
  if (threadIds.length === 0) return out;
  const rows = agentRunRows.decodeAll(
    await db
      .selectFrom('inbox_agent_runs')
      .selectAll()
      .where('thread_id', 'in', threadIds)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
  );
  for (const r of rows) out.set(r.thread_id, [...(out.get(r.thread_id) ?? []), r]);
  return out;
}

export const findInboxMessage = async (db: Db, id: string): Promise<InboxMessage | undefined> => {
  const row = await db.selectFrom('inbox_messages').selectAll().where('id', '=', id).executeTakeFirst();
  return row && messageRows.decode(row);
};
