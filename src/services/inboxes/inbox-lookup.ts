import { notFound } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import {
  findThread,
  listAgentRunsOfThreads,
  listLabelsOfThreads,
  listMessagesOfThreads,
  listThreadsWithDrafts,
  type InboxThread,
} from '../../store/inboxes.js';
import type { ServiceDeps } from '../deps.js';
import type { RouteService, RouteView } from '../receiving/routes.js';
import { threadView, type ThreadView } from './inbox-views.js';

/** What the inbox use cases take: the service deps and the routes an inbox is one of. */
export type InboxDeps = ServiceDeps & { routes: RouteService };

/** The inbox (a route for one address), by id or address; 404 otherwise. */
export async function findInbox(deps: InboxDeps, workspaceId: string, idOrAddress: string): Promise<RouteView> {
  const route = await deps.routes.get(workspaceId, idOrAddress);
  if (route.kind !== 'address') throw notFound(`Inbox ${idOrAddress}`);
  return route;
}

export async function findInboxThread(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  threadId: string,
): Promise<{ inbox: RouteView; thread: InboxThread }> {
  const box = await findInbox(deps, workspaceId, inboxRef);
  const row = isUuid(threadId) ? await findThread(deps.db, box.id, threadId.toLowerCase()) : undefined;
  if (!row) throw notFound(`Thread ${threadId}`);
  return { inbox: box, thread: row };
}

/** Views of threads, with what each is computed from read in four queries. */
export async function threadViews(deps: Pick<ServiceDeps, 'db'>, rows: InboxThread[]): Promise<ThreadView[]> {
  const ids = rows.map((t) => t.id);
  const [messages, labels, drafts, runs] = await Promise.all([
    listMessagesOfThreads(deps.db, ids),
    listLabelsOfThreads(deps.db, ids),
    listThreadsWithDrafts(deps.db, ids),
    listAgentRunsOfThreads(deps.db, ids),
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
