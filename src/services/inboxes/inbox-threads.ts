import { notFound, validationError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import {
  countOpenDrafts,
  countUnreadThreads,
  findMatchedMessages,
  findThread,
  findThreadMessage,
  listThreadMessagesPage,
  listThreadsPage,
  removeThread,
  setThreadRead,
  updateThreadFolder,
  type MessageSearch,
  type ThreadFilter,
  type InboxFolder,
  type InboxThread,
} from '../../store/inboxes.js';
import type { ListPage } from '../../store/infra/list-page.js';
import type { RouteView } from '../receiving/routes.js';
import {
  createInboxLabel,
  labelFilter,
  labelThread,
  listInboxLabels,
  removeInboxLabel,
  unlabelThread,
  updateInboxLabel,
} from './inbox-labels.js';
import { findInbox, findInboxThread, threadViews, type InboxDeps } from './inbox-lookup.js';
import {
  messageIdOf,
  messageView,
  type labelView,
  type threadLabelView,
  type MessageView,
  type ThreadView,
} from './inbox-views.js';

interface ThreadListQuery {
  folders?: InboxFolder[] | undefined;
  labels?: string[] | undefined;
  read?: boolean | undefined;
}

/** The conversations of an inbox: threads, their messages, folders, read state and labels. */
export interface InboxThreadService {
  /** The inbox (a route for one address), by id or address; 404 otherwise. */
  inbox(workspaceId: string, idOrAddress: string): Promise<RouteView>;
  list(
    workspaceId: string,
    inbox: string,
    query: ThreadListQuery,
    page: ListPage,
  ): Promise<{ data: ThreadView[]; more: boolean }>;
  search(
    workspaceId: string,
    inbox: string,
    query: ThreadListQuery & MessageSearch,
    page: ListPage,
  ): Promise<{ data: Array<ThreadView & { matched_email_id: string | null }>; more: boolean }>;
  get(workspaceId: string, inbox: string, threadId: string): Promise<ThreadView>;
  update(
    workspaceId: string,
    inbox: string,
    threadId: string,
    changes: { read?: boolean | undefined; folder?: Exclude<InboxFolder, 'sent'> | undefined },
  ): Promise<ThreadView>;
  remove(workspaceId: string, inbox: string, threadId: string): Promise<{ id: string }>;
  messages(
    workspaceId: string,
    inbox: string,
    threadId: string,
    page: ListPage,
  ): Promise<{ data: MessageView[]; more: boolean }>;
  message(workspaceId: string, inbox: string, threadId: string, emailId: string): Promise<MessageView>;
  /** Unread threads and open drafts of each inbox. */
  counts(inboxIds: string[]): Promise<Map<string, { unread: number; drafts: number }>>;
  /** The thread row itself, for replies and drafts. */
  findThread(workspaceId: string, inbox: string, threadId: string): Promise<{ inbox: RouteView; thread: InboxThread }>;

  labels(workspaceId: string, inbox: string): Promise<Array<ReturnType<typeof labelView>>>;
  createLabel(
    workspaceId: string,
    inbox: string,
    input: { name: string; color?: string | undefined },
  ): Promise<ReturnType<typeof labelView>>;
  updateLabel(
    workspaceId: string,
    inbox: string,
    labelId: string,
    changes: { name?: string | undefined; color?: string | undefined },
  ): Promise<ReturnType<typeof labelView>>;
  removeLabel(workspaceId: string, inbox: string, labelId: string): Promise<{ id: string }>;
  addLabels(
    workspaceId: string,
    inbox: string,
    threadId: string,
    labelIds: string[],
  ): Promise<Array<ReturnType<typeof threadLabelView>>>;
  setLabels(
    workspaceId: string,
    inbox: string,
    threadId: string,
    labelIds: string[],
  ): Promise<Array<ReturnType<typeof threadLabelView>>>;
  removeThreadLabel(
    workspaceId: string,
    inbox: string,
    threadId: string,
    labelId: string,
  ): Promise<Array<ReturnType<typeof threadLabelView>>>;
}

export function createInboxThreadService(deps: InboxDeps): InboxThreadService {
  const thread = (workspaceId: string, inboxRef: string, threadId: string) =>
    findInboxThread(deps, workspaceId, inboxRef, threadId);
  return {
    inbox: (workspaceId, idOrAddress) => findInbox(deps, workspaceId, idOrAddress),
    findThread: thread,
    counts: (inboxIds) => countThreads(deps, inboxIds),
    list: (workspaceId, inboxRef, query, page) => listThreads(deps, workspaceId, inboxRef, query, page),
    search: (workspaceId, inboxRef, query, page) => searchThreads(deps, workspaceId, inboxRef, query, page),
    async get(workspaceId, inboxRef, threadId) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      return (await threadViews(deps, [row]))[0]!;
    },
    update: (workspaceId, inboxRef, threadId, changes) => updateThread(deps, workspaceId, inboxRef, threadId, changes),
    async remove(workspaceId, inboxRef, threadId) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      // The thread and its filing go; the received and sent emails themselves stay in their logs.
      await removeThread(deps.db, row.id);
      await deps.durable();
      return { id: row.id };
    },
    async messages(workspaceId, inboxRef, threadId, page) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      const { rows, more } = await listThreadMessagesPage(deps.db, row.id, page);
      return { data: rows.map(messageView), more };
    },
    async message(workspaceId, inboxRef, threadId, emailId) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      const m = isUuid(emailId) ? await findThreadMessage(deps.db, row.id, emailId.toLowerCase()) : undefined;
      if (!m) throw notFound(`Email ${emailId} of thread ${threadId}`);
      return messageView(m);
    },
    labels: (workspaceId, inboxRef) => listInboxLabels(deps, workspaceId, inboxRef),
    createLabel: (workspaceId, inboxRef, input) => createInboxLabel(deps, workspaceId, inboxRef, input),
    updateLabel: (workspaceId, inboxRef, labelId, changes) =>
      updateInboxLabel(deps, workspaceId, inboxRef, labelId, changes),
    removeLabel: (workspaceId, inboxRef, labelId) => removeInboxLabel(deps, workspaceId, inboxRef, labelId),
    addLabels: (workspaceId, inboxRef, threadId, labelIds) =>
      labelThread(deps, workspaceId, inboxRef, threadId, labelIds, false),
    setLabels: (workspaceId, inboxRef, threadId, labelIds) =>
      labelThread(deps, workspaceId, inboxRef, threadId, labelIds, true),
    removeThreadLabel: (workspaceId, inboxRef, threadId, labelId) =>
      unlabelThread(deps, workspaceId, inboxRef, threadId, labelId),
  };
}

async function countThreads(deps: InboxDeps, inboxIds: string[]) {
  const [unread, drafts] = await Promise.all([
    countUnreadThreads(deps.db, inboxIds),
    countOpenDrafts(deps.db, inboxIds),
  ]);
  return new Map(inboxIds.map((id) => [id, { unread: unread.get(id) ?? 0, drafts: drafts.get(id) ?? 0 }]));
}

async function threadFilter(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  query: ThreadListQuery,
): Promise<ThreadFilter> {
  const box = await findInbox(deps, workspaceId, inboxRef);
  return {
    inboxId: box.id,
    folders: query.folders,
    read: query.read,
    labelIds: await labelFilter(deps, workspaceId, inboxRef, query.labels),
  };
}

async function listThreads(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  query: ThreadListQuery,
  page: ListPage,
) {
  const filter = await threadFilter(deps, workspaceId, inboxRef, query);
  const { rows, more } = await listThreadsPage(deps.db, deps.dialect, filter, page);
  return { data: await threadViews(deps, rows), more };
}

async function searchThreads(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  query: ThreadListQuery & MessageSearch,
  page: ListPage,
) {
  const search: MessageSearch = {
    query: query.query,
    from: query.from,
    to: query.to,
    cc: query.cc,
    bcc: query.bcc,
    hasAttachment: query.hasAttachment,
    startDate: query.startDate,
    endDate: query.endDate,
  };
  const filter = { ...(await threadFilter(deps, workspaceId, inboxRef, query)), search };
  const { rows, more } = await listThreadsPage(deps.db, deps.dialect, filter, page);
  const [data, matched] = await Promise.all([
    threadViews(deps, rows),
    findMatchedMessages(
      deps.db,
      deps.dialect,
      rows.map((t) => t.id),
      search,
    ),
  ]);
  return {
    data: data.map((t) => ({ ...t, matched_email_id: matched.has(t.id) ? messageIdOf(matched.get(t.id)!) : null })),
    more,
  };
}

async function updateThread(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  threadId: string,
  changes: { read?: boolean | undefined; folder?: Exclude<InboxFolder, 'sent'> | undefined },
): Promise<ThreadView> {
  const { thread: row } = await findInboxThread(deps, workspaceId, inboxRef, threadId);
  if (changes.read === undefined && changes.folder === undefined) throw validationError('read', 'give read or folder');
  const now = deps.clock.now();
  if (changes.folder !== undefined) await updateThreadFolder(deps.db, row.id, changes.folder, now);
  if (changes.read !== undefined) await setThreadRead(deps.db, row.id, changes.read, now);
  await deps.durable();
  const updated: InboxThread | undefined = await findThread(deps.db, row.inbox_id, row.id);
  return (await threadViews(deps, [updated!]))[0]!;
}
