import { toIso, toIsoOrNull } from '../shared/clock.js';
import { validationError } from '../shared/errors.js';
import { refreshEmailStatus } from '../store/emails.js';
import {
  cancelQueueItems,
  countQueueItems,
  listQueueItems,
  listQueueItemsByIds,
  listWaitingQueueItemIds,
  makeQueueItemsDue,
} from '../store/queue.js';
import { QUEUE_STATUSES, type QueueItem, type QueueStatus } from '../store/tables.js';
import type { ServiceDeps } from './deps.js';

/** Operator views and actions on the delivery queue (`mailsvc queue list|retry|cancel`). */

export interface QueueItemView {
  id: string;
  email_id: string;
  workspace_id: string;
  recipient: string;
  status: QueueStatus;
  priority: 'transactional' | 'marketing';
  test: boolean;
  attempts: number;
  next_attempt_at: string;
  last_code: number | null;
  last_response: string | null;
  lease_owner: string | null;
  lease_until: string | null;
  created_at: string;
  finished_at: string | null;
}

export interface QueueListInput {
  workspaceId?: string | undefined;
  statuses?: string[] | undefined;
  limit: number;
  offset: number;
}

export interface QueueService {
  list(input: QueueListInput): Promise<{ items: QueueItemView[]; total: number }>;
  /** Makes waiting rows (queued, deferred) due now; ids are queue item or email ids. */
  retry(ids: string[] | 'all-deferred', workspaceId?: string): Promise<QueueItemView[]>;
  /** Cancels waiting rows; rows in flight or finished are left alone. */
  cancel(ids: string[]): Promise<QueueItemView[]>;
}

export const queueItemView = (q: QueueItem): QueueItemView => ({
  id: q.id,
  email_id: q.email_id,
  workspace_id: q.workspace_id,
  recipient: q.recipient,
  status: q.status,
  priority: q.priority === 0 ? 'transactional' : 'marketing',
  test: q.test === 1,
  attempts: q.attempts,
  next_attempt_at: toIso(q.next_attempt_at),
  last_code: q.last_code,
  last_response: q.last_response,
  lease_owner: q.lease_owner,
  lease_until: toIsoOrNull(q.lease_until),
  created_at: toIso(q.created_at),
  finished_at: toIsoOrNull(q.finished_at),
});

export function createQueueService(deps: ServiceDeps): QueueService {
  const { db, clock } = deps;

  const statusesOf = (statuses: string[] | undefined): QueueStatus[] | undefined => {
    if (!statuses || statuses.length === 0) return undefined;
    for (const s of statuses) {
      if (!(QUEUE_STATUSES as readonly string[]).includes(s)) throw validationError('status', `"${s}" is not one of ${QUEUE_STATUSES.join(', ')}`);
    }
    return statuses as QueueStatus[];
  };

  const idsOf = async (ids: string[]): Promise<string[]> => {
    if (ids.length === 0) throw validationError('ids', 'name at least one queue item or email id');
    return (await listQueueItemsByIds(db, ids)).map((q) => q.id);
  };

  return {
    async list(input) {
      const filter = { workspaceId: input.workspaceId, statuses: statusesOf(input.statuses) };
      const [rows, total] = await Promise.all([listQueueItems(db, { ...filter, limit: input.limit, offset: input.offset }), countQueueItems(db, filter)]);
      return { items: rows.map(queueItemView), total };
    },

    async retry(ids, workspaceId) {
      const targets = ids === 'all-deferred' ? await listWaitingQueueItemIds(db, ['deferred'], workspaceId) : await idsOf(ids);
      const now = clock.now();
      const rows: QueueItem[] = [];
      for (let i = 0; i < targets.length; i += 500) {
        rows.push(...(await db.transaction().execute((trx) => makeQueueItemsDue(trx, targets.slice(i, i + 500), now))));
      }
      return rows.map(queueItemView);
    },

    async cancel(ids) {
      const targets = await idsOf(ids);
      const now = clock.now();
      const rows = await db.transaction().execute(async (trx) => {
        const cancelled = await cancelQueueItems(trx, targets, now);
        for (const emailId of new Set(cancelled.map((c) => c.email_id))) await refreshEmailStatus(trx, emailId, now);
        return cancelled;
      });
      return rows.map(queueItemView);
    },
  };
}
