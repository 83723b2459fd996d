import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import {
  addThreadLabels,
  countOpenDrafts,
  countUnreadThreads,
  findLabel,
  findLabelByName,
  findMatchedMessages,
  findThread,
  findThreadMessage,
  listAgentRunsOfThreads,
  listLabels,
  listLabelsOfThreads,
  listMessagesOfThreads,
  listThreadMessagesPage,
  listThreadsPage,
  listThreadsWithDrafts,
  removeLabel,
  removeThread,
  removeThreadLabels,
  saveLabel,
  setThreadRead,
  updateLabel,
  updateThreadFolder,
  type MessageSearch,
  type ThreadFilter,
  type InboxFolder,
  type InboxLabel,
  type InboxThread,
} from '../../store/inboxes.js';
import type { ListPage } from '../../store/infra/list-page.js';
import type { ServiceDeps } from '../deps.js';
import type { RouteService, RouteView } from '../receiving/routes.js';
import {
  labelView,
  messageIdOf,
  messageView,
  threadLabelView,
  threadView,
  type MessageView,
  type ThreadView,
} from './inbox-views.js';

/** At most this many labels in one add or set, as Resend takes them. */
const MAX_THREAD_LABELS = 10;
/** Labels one inbox may have. */
const MAX_LABELS = 100;
const COLOR = /^#[0-9A-Fa-f]{6}$/;
/** Colours given to labels created without one, in turn. */
const PALETTE = ['#E93D82', '#3E63DD', '#30A46C', '#F76B15', '#8E4EC6', '#12A594', '#E5484D', '#FFC53D'];

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

export function createInboxThreadService(deps: ServiceDeps & { routes: RouteService }): InboxThreadService {
  const { db, dialect, clock, routes } = deps;

  async function inbox(workspaceId: string, idOrAddress: string): Promise<RouteView> {
    const route = await routes.get(workspaceId, idOrAddress);
    if (route.kind !== 'address') throw notFound(`Inbox ${idOrAddress}`);
    return route;
  }

  async function thread(workspaceId: string, inboxRef: string, threadId: string) {
    const box = await inbox(workspaceId, inboxRef);
    const row = isUuid(threadId) ? await findThread(db, box.id, threadId.toLowerCase()) : undefined;
    if (!row) throw notFound(`Thread ${threadId}`);
    return { inbox: box, thread: row };
  }

  /** Views of threads, with what each is computed from read in four queries. */
  async function views(rows: InboxThread[]): Promise<ThreadView[]> {
    const ids = rows.map((t) => t.id);
    const [messages, labels, drafts, runs] = await Promise.all([
      listMessagesOfThreads(db, ids),
      listLabelsOfThreads(db, ids),
      listThreadsWithDrafts(db, ids),
      listAgentRunsOfThreads(db, ids),
    ]);
    return rows.map((t) =>
      threadView(
        t,
        messages.filter((m) => m.thread_id === t.id),
        labels.get(t.id) ?? [],
        drafts.has(t.id),
        runs.get(t.id) ?? [],
      ),
    );
  }

  async function labelsOf(
    workspaceId: string,
    inboxRef: string,
    labelIds: string[],
    field: string,
  ): Promise<InboxLabel[]> {
    const box = await inbox(workspaceId, inboxRef);
    const unique = [...new Set(labelIds.map((l) => l.toLowerCase()))];
    const found = await Promise.all(
      unique.map((id) => (isUuid(id) ? findLabel(db, box.id, id) : Promise.resolve(undefined))),
    );
    const missing = unique.filter((_, i) => !found[i]);
    if (missing.length > 0)
      throw new AppError('not_found', `${field}: label ${missing[0]} not found in this inbox`, { field });
    return found as InboxLabel[];
  }

  const threadLabels = async (threadId: string) =>
    (await listLabelsOfThreads(db, [threadId])).get(threadId)?.map(threadLabelView) ?? [];

  function checkLabel(input: { name?: string | undefined; color?: string | undefined }) {
    if (
      input.name !== undefined &&
      (input.name.trim() === '' || input.name.length > 50 || /[\u0000-\u001f]/.test(input.name))
    ) {
      throw validationError('name', 'must be 1 to 50 printable characters');
    }
    if (input.color !== undefined && !COLOR.test(input.color))
      throw validationError('color', 'must be a colour as #RRGGBB');
  }

  async function labelFilter(
    workspaceId: string,
    inboxRef: string,
    names: string[] | undefined,
  ): Promise<string[] | undefined> {
    if (!names?.length) return undefined;
    // Labels are named by id, or by name (the form a person types).
    const box = await inbox(workspaceId, inboxRef);
    const found = await Promise.all(
      names.map(
        async (n) =>
          (isUuid(n) ? await findLabel(db, box.id, n.toLowerCase()) : undefined) ??
          (await findLabelByName(db, box.id, n)),
      ),
    );
    // An unknown label matches no thread: an empty list of ids would match every thread.
    return found.map((l) => l?.id ?? '00000000-0000-0000-0000-000000000000');
  }

  return {
    inbox,
    findThread: thread,

    async counts(inboxIds) {
      const [unread, drafts] = await Promise.all([countUnreadThreads(db, inboxIds), countOpenDrafts(db, inboxIds)]);
      return new Map(inboxIds.map((id) => [id, { unread: unread.get(id) ?? 0, drafts: drafts.get(id) ?? 0 }]));
    },

    async list(workspaceId, inboxRef, query, page) {
      const box = await inbox(workspaceId, inboxRef);
      const filter: ThreadFilter = {
        inboxId: box.id,
        folders: query.folders,
        read: query.read,
        labelIds: await labelFilter(workspaceId, inboxRef, query.labels),
      };
      const { rows, more } = await listThreadsPage(db, dialect, filter, page);
      return { data: await views(rows), more };
    },

    async search(workspaceId, inboxRef, query, page) {
      const box = await inbox(workspaceId, inboxRef);
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
      const filter: ThreadFilter = {
        inboxId: box.id,
        folders: query.folders,
        read: query.read,
        labelIds: await labelFilter(workspaceId, inboxRef, query.labels),
        search,
      };
      const { rows, more } = await listThreadsPage(db, dialect, filter, page);
      const [data, matched] = await Promise.all([
        views(rows),
        findMatchedMessages(
          db,
          dialect,
          rows.map((t) => t.id),
          search,
        ),
      ]);
      return {
        data: data.map((t) => ({ ...t, matched_email_id: matched.has(t.id) ? messageIdOf(matched.get(t.id)!) : null })),
        more,
      };
    },

    async get(workspaceId, inboxRef, threadId) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      return (await views([row]))[0]!;
    },

    async update(workspaceId, inboxRef, threadId, changes) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      if (changes.read === undefined && changes.folder === undefined)
        throw validationError('read', 'give read or folder');
      const now = clock.now();
      if (changes.folder !== undefined) await updateThreadFolder(db, row.id, changes.folder, now);
      if (changes.read !== undefined) await setThreadRead(db, row.id, changes.read, now);
      await deps.durable();
      return (await views([(await findThread(db, row.inbox_id, row.id))!]))[0]!;
    },

    async remove(workspaceId, inboxRef, threadId) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      // The thread and its filing go; the received and sent emails themselves stay in their logs.
      await removeThread(db, row.id);
      await deps.durable();
      return { id: row.id };
    },

    async messages(workspaceId, inboxRef, threadId, page) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      const { rows, more } = await listThreadMessagesPage(db, row.id, page);
      return { data: rows.map(messageView), more };
    },

    async message(workspaceId, inboxRef, threadId, emailId) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      const m = isUuid(emailId) ? await findThreadMessage(db, row.id, emailId.toLowerCase()) : undefined;
      if (!m) throw notFound(`Email ${emailId} of thread ${threadId}`);
      return messageView(m);
    },

    async labels(workspaceId, inboxRef) {
      const box = await inbox(workspaceId, inboxRef);
      return (await listLabels(db, box.id)).map(labelView);
    },

    async createLabel(workspaceId, inboxRef, input) {
      const box = await inbox(workspaceId, inboxRef);
      checkLabel(input);
      const existing = await listLabels(db, box.id);
      if (existing.length >= MAX_LABELS)
        throw new AppError('invalid_state', `An inbox has at most ${MAX_LABELS} labels`);
      const name = input.name.trim();
      if (existing.some((l) => l.name === name))
        throw new AppError('already_exists', `name: the inbox already has a label named ${name}`, { field: 'name' });
      const label: InboxLabel = {
        id: newId(),
        workspace_id: workspaceId,
        inbox_id: box.id,
        name,
        color: (input.color ?? PALETTE[existing.length % PALETTE.length]!).toUpperCase(),
        created_at: clock.now(),
      };
      await saveLabel(db, label);
      await deps.durable();
      return labelView(label);
    },

    async updateLabel(workspaceId, inboxRef, labelId, changes) {
      const [label] = await labelsOf(workspaceId, inboxRef, [labelId], 'labelId');
      if (changes.name === undefined && changes.color === undefined)
        throw validationError('name', 'give name or color');
      checkLabel(changes);
      const name = changes.name?.trim();
      // A name another label of the inbox has is already_exists (store/inboxes.ts).
      const update = {
        ...(name !== undefined ? { name } : {}),
        ...(changes.color !== undefined ? { color: changes.color.toUpperCase() } : {}),
      };
      await updateLabel(db, label!.id, update);
      await deps.durable();
      return labelView({ ...label!, ...update });
    },

    async removeLabel(workspaceId, inboxRef, labelId) {
      const [label] = await labelsOf(workspaceId, inboxRef, [labelId], 'labelId');
      await removeLabel(db, label!.id);
      await deps.durable();
      return { id: label!.id };
    },

    async addLabels(workspaceId, inboxRef, threadId, labelIds) {
      if (labelIds.length < 1 || labelIds.length > MAX_THREAD_LABELS)
        throw validationError('labels', `between 1 and ${MAX_THREAD_LABELS} label ids`);
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      const labels = await labelsOf(workspaceId, inboxRef, labelIds, 'labels');
      await addThreadLabels(
        db,
        row.id,
        labels.map((l) => l.id),
        clock.now(),
      );
      await deps.durable();
      return threadLabels(row.id);
    },

    async setLabels(workspaceId, inboxRef, threadId, labelIds) {
      if (labelIds.length > MAX_THREAD_LABELS)
        throw validationError('labels', `at most ${MAX_THREAD_LABELS} label ids`);
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      const labels = await labelsOf(workspaceId, inboxRef, labelIds, 'labels');
      await db.transaction().execute(async (trx) => {
        await removeThreadLabels(trx, row.id);
        await addThreadLabels(
          trx,
          row.id,
          labels.map((l) => l.id),
          clock.now(),
        );
      });
      await deps.durable();
      return threadLabels(row.id);
    },

    async removeThreadLabel(workspaceId, inboxRef, threadId, labelId) {
      const { thread: row } = await thread(workspaceId, inboxRef, threadId);
      const [label] = await labelsOf(workspaceId, inboxRef, [labelId], 'labelId');
      await removeThreadLabels(db, row.id, [label!.id]);
      await deps.durable();
      return threadLabels(row.id);
    },
  };
}
