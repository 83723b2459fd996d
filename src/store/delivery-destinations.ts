import type { Db } from './db.js';
import type { DeliveryDestination } from './tables.js';

/**
 * What each node's delivery gate holds per destination (delivery_destinations): written by
 * the node a few times a minute, read by `mailsvc queue list` and the queue view, so that why
 * mail waits is visible outside the process that holds it.
 */

/** Replaces `owner`'s rows with `rows` (a node's whole view at once). */
export async function saveDeliveryDestinations(db: Db, owner: string, rows: DeliveryDestination[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('delivery_destinations').where('owner', '=', owner).execute();
    for (let i = 0; i < rows.length; i += 200) await trx.insertInto('delivery_destinations').values(rows.slice(i, i + 200)).execute();
  });
}

/** Rows written since `since` (older ones are of nodes that stopped or died), by domain. */
export const listDeliveryDestinations = (db: Db, since: number, domains?: readonly string[]): Promise<DeliveryDestination[]> => {
  if (domains?.length === 0) return Promise.resolve([]);
  let q = db.selectFrom('delivery_destinations').selectAll().where('updated_at', '>=', since);
  if (domains) q = q.where('domain', 'in', [...domains]);
  return q.orderBy('domain').orderBy('owner').execute();
};

/** A node's rows, when it stops. */
export const removeDeliveryDestinations = async (db: Db, owner: string): Promise<void> => {
  await db.deleteFrom('delivery_destinations').where('owner', '=', owner).execute();
};

/** What the delivery gates of the running nodes hold for one destination, summed over the nodes. */
export interface DestinationSum {
  domain: string;
  /** SMTP transactions running now. */
  active: number;
  /** Transactions allowed at once (the limit, lowered while the destination throttles us), per node. */
  allowed: number;
  /** Claimed messages waiting for a slot. */
  waiting: number;
  /** Until when the destination is paused after a slow-down reply (ISO 8601), or null. */
  paused_until: string | null;
  /** Why a message to it cannot start now: paused, concurrency (every slot busy), rate (the per-minute limit), or null. */
  hold: 'paused' | 'concurrency' | 'rate' | null;
  /** Nodes reporting it. */
  nodes: number;
}

/** The strongest reason any node has: paused, then every slot busy, then the rate. */
const RANK = { paused: 3, concurrency: 2, rate: 1 } as const;

/** The reports written since `since`, summed per destination (for `queue list`); pauses still running at `now`. */
export async function sumDeliveryDestinations(db: Db, since: number, now: number, domains: readonly string[]): Promise<DestinationSum[]> {
  const byDomain = new Map<string, DestinationSum & { until: number }>();
  for (const r of await listDeliveryDestinations(db, since, domains)) {
    const d = byDomain.get(r.domain) ?? { domain: r.domain, active: 0, allowed: 0, waiting: 0, paused_until: null, hold: null, nodes: 0, until: 0 };
    d.active += r.active;
    d.allowed = Math.max(d.allowed, r.allowed);
    d.waiting += r.waiting;
    d.nodes++;
    d.until = Math.max(d.until, r.paused_until ?? 0);
    if (r.hold && (!d.hold || RANK[r.hold] > RANK[d.hold])) d.hold = r.hold;
    byDomain.set(r.domain, d);
  }
  return [...byDomain.values()].map(({ until, ...d }) => ({ ...d, paused_until: until > now ? new Date(until).toISOString() : null }));
}
