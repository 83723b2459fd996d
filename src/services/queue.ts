import { toIso, toIsoOrNull } from '../shared/clock.js';
import { notFound, validationError } from '../shared/errors.js';
import {
  sumDeliveryDestinations,
  sumProviders,
  type DestinationSum,
  type ProviderSum,
} from '../store/delivery-destinations.js';
import { refreshEmailStatus, QUEUE_STATUSES, type QueueItem, type QueueStatus } from '../store/emails.js';
import {
  cancelQueueItems,
  countDueQueueItemsByDomain,
  countQueueItems,
  listQueueItems,
  listQueueItemsByIds,
  listWaitingQueueItemIds,
  makeQueueItemsDue,
} from '../store/queue.js';
import type { ServiceDeps } from './deps.js';
import { destinationLimitOf, limitSetting } from '../delivery/destination-key.js';
import { isOneOf } from '../shared/one-of.js';

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
  /** Why a waiting or in-flight row has not gone yet, in words (null once finished). */
  waiting: string | null;
}

export type DestinationView = DestinationSum;

/** A node's report older than this is of a node that stopped or died. */
const DESTINATION_REPORT_MS = 30_000;

interface QueueListInput {
  workspaceId?: string | undefined;
  statuses?: string[] | undefined;
  limit: number;
  offset: number;
}

export interface QueueService {
  /** Rows soonest due first, and the destinations they wait for as the running nodes see them. */
  list(input: QueueListInput): Promise<{ items: QueueItemView[]; total: number; destinations: DestinationView[] }>;
  /** Makes waiting rows (queued, deferred) due now; ids are queue item or email ids. */
  retry(ids: string[] | 'all-deferred', workspaceId?: string): Promise<QueueItemView[]>;
  /** Cancels waiting rows; rows in flight or finished are left alone. */
  cancel(ids: string[]): Promise<QueueItemView[]>;
  /** Each destination (mailbox provider and source address) as the running nodes reported it in the last 30 s: state, limits, last slow-down reply. */
  providers(): Promise<ProviderSum[]>;
}

const queueItemView = (q: QueueItem, waiting: string | null = null): QueueItemView => ({
  id: q.id,
  email_id: q.email_id,
  workspace_id: q.workspace_id,
  recipient: q.recipient,
  status: q.status,
  priority: q.priority === 0 ? 'transactional' : 'marketing',
  test: q.test,
  attempts: q.attempts,
  next_attempt_at: toIso(q.next_attempt_at),
  last_code: q.last_code,
  last_response: q.last_response,
  lease_owner: q.lease_owner,
  lease_until: toIsoOrNull(q.lease_until),
  created_at: toIso(q.created_at),
  finished_at: toIsoOrNull(q.finished_at),
  waiting,
});

/** A destination's limits in words: `group` is its provider (or MX host, or the domain) when a node reported it. */
const limitText = (config: ServiceDeps['config']['delivery'], domain: string, group = domain): string => {
  const limit = destinationLimitOf(config)(group);
  const name = group === domain ? domain : `${domain} (${group})`;
  return `${name} takes ${limit.concurrency} at once and ${limit.perMinute.toLocaleString('en-US')}/min (${limitSetting(config, group)})`;
};

/**
 * Why a row waits, from what the database knows: its schedule, its last reply, and how many
 * rows are due before it for the same destination under that destination's limit.
 */
function waitingReason(
  q: QueueItem,
  now: number,
  dueByDomain: Map<string, number>,
  gates: Map<string, DestinationView>,
  config: ServiceDeps['config']['delivery'],
): string | null {
  if (q.finished_at !== null || !['queued', 'deferred', 'sending'].includes(q.status)) return null;
  if (q.status === 'sending') {
    const gate = gates.get(q.recipient_domain);
    const seen = gate ? `: ${gateText(gate)}` : ': in an SMTP transaction or waiting for a slot';
    return `claimed by ${q.lease_owner ?? 'a worker'} until ${toIsoOrNull(q.lease_until) ?? '?'}${seen} (${limitText(config, q.recipient_domain, gate?.provider)}${gate?.source ? `, from ${gate.source}` : ''})`;
  }
  if (q.next_attempt_at > now) {
    const at = toIso(q.next_attempt_at);
    if (q.status === 'deferred')
      return `retry at ${at}${q.last_response ? ` after: ${q.last_response.slice(0, 120)}` : ''}`;
    return q.last_response ? `held until ${at}: ${q.last_response.slice(0, 120)}` : `scheduled for ${at}`;
  }
  const due = dueByDomain.get(q.recipient_domain) ?? 1;
  const gate = gates.get(q.recipient_domain);
  const limit = destinationLimitOf(config)(gate?.provider ?? q.recipient_domain);
  const minutes = due / limit.perMinute;
  const eta = minutes >= 1 ? `; at that rate about ${Math.ceil(minutes)} min for all of them` : '';
  const state =
    gate?.hold === 'paused'
      ? `; ${gate.provider} is backed off${gate.source ? ` on ${gate.source}` : ''} until ${gate.paused_until} after a slow-down reply`
      : '';
  return `due: waiting its turn, ${due.toLocaleString('en-US')} due for ${limitText(config, q.recipient_domain, gate?.provider)}${eta}${state}`;
}

/** A destination's gate in words. */
export const gateText = (d: DestinationView): string => {
  const state =
    d.hold === 'paused'
      ? `paused until ${d.paused_until} after a slow-down reply`
      : d.hold === 'concurrency'
        ? 'every slot busy'
        : d.hold === 'rate'
          ? 'at its per-minute limit'
          : d.waiting > 0
            ? 'starting the next'
            : 'free';
  return `${d.active} of ${d.allowed} transaction(s) running, ${d.waiting} waiting, ${state}`;
};

export function createQueueService(deps: ServiceDeps): QueueService {
  const { db, clock } = deps;

  const statusesOf = (statuses: string[] | undefined): QueueStatus[] | undefined => {
    if (!statuses || statuses.length === 0) return undefined;
    for (const s of statuses) {
      if (!isOneOf(QUEUE_STATUSES, s))
        throw validationError('status', `"${s}" is not one of ${QUEUE_STATUSES.join(', ')}`);
    }
    return statuses as QueueStatus[];
  };

  /** The queue rows the ids name (row ids, or email ids for all their rows); an id that names nothing is a 404. */
  const idsOf = async (ids: string[]): Promise<string[]> => {
    if (ids.length === 0) throw validationError('ids', 'name at least one queue item or email id');
    const rows = await listQueueItemsByIds(db, ids);
    const known = new Set(rows.flatMap((q) => [q.id, q.email_id]));
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0) throw notFound(`Queue item or email ${unknown.join(', ')}`);
    return rows.map((q) => q.id);
  };

  return {
    async list(input) {
      const filter = { workspaceId: input.workspaceId, statuses: statusesOf(input.statuses) };
      const [rows, total] = await Promise.all([
        listQueueItems(db, { ...filter, limit: input.limit, offset: input.offset }),
        countQueueItems(db, filter),
      ]);
      const now = clock.now();
      const dueDomains = [
        ...new Set(
          rows
            .filter((r) => (r.status === 'queued' || r.status === 'deferred') && r.next_attempt_at <= now)
            .map((r) => r.recipient_domain),
        ),
      ];
      const waitingDomains = [
        ...new Set(
          rows.filter((r) => ['queued', 'deferred', 'sending'].includes(r.status)).map((r) => r.recipient_domain),
        ),
      ];
      const [dueByDomain, destinations] = await Promise.all([
        countDueQueueItemsByDomain(db, dueDomains, now),
        sumDeliveryDestinations(db, now - DESTINATION_REPORT_MS, now, waitingDomains),
      ]);
      const gates = new Map(destinations.map((d) => [d.domain, d]));
      return {
        items: rows.map((r) => queueItemView(r, waitingReason(r, now, dueByDomain, gates, deps.config.delivery))),
        total,
        destinations,
      };
    },

    async retry(ids, workspaceId) {
      const targets =
        ids === 'all-deferred' ? await listWaitingQueueItemIds(db, ['deferred'], workspaceId) : await idsOf(ids);
      const now = clock.now();
      const rows: QueueItem[] = [];
      for (let i = 0; i < targets.length; i += 500) {
        rows.push(...(await db.transaction().execute((trx) => makeQueueItemsDue(trx, targets.slice(i, i + 500), now))));
      }
      return rows.map((r) => queueItemView(r));
    },

    providers: () => sumProviders(db, clock.now() - DESTINATION_REPORT_MS, clock.now()),

    async cancel(ids) {
      const targets = await idsOf(ids);
      const now = clock.now();
      const rows = await db.transaction().execute(async (trx) => {
        const cancelled = await cancelQueueItems(trx, targets, now);
        for (const emailId of new Set(cancelled.map((c) => c.email_id))) await refreshEmailStatus(trx, emailId, now);
        return cancelled;
      });
      return rows.map((r) => queueItemView(r));
    },
  };
}
