import type { Db } from './infra/db.js';
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
    for (let i = 0; i < rows.length; i += 200)
      await trx
        .insertInto('delivery_destinations')
        .values(rows.slice(i, i + 200))
        .execute();
  });
}

/** Rows written since `since` (older ones are of nodes that stopped or died). */
const listDeliveryDestinations = (db: Db, since: number): Promise<DeliveryDestination[]> =>
  db
    .selectFrom('delivery_destinations')
    .selectAll()
    .where('updated_at', '>=', since)
    .orderBy('domain')
    .orderBy('owner')
    .execute();

/** The recipient domains a row's destination serves (a row of a node before 0051: its key is the domain). */
const domainsOf = (r: DeliveryDestination): string[] => (r.domains ? r.domains.split(' ').filter(Boolean) : [r.domain]);

/** Pauses other nodes reported since `since` and still running at `now`, by destination key. */
export const listOthersPauses = async (
  db: Db,
  owner: string,
  since: number,
  now: number,
): Promise<Array<{ key: string; until: number }>> =>
  (
    await db
      .selectFrom('delivery_destinations')
      .select(['domain', 'paused_until'])
      .where('owner', '!=', owner)
      .where('updated_at', '>=', since)
      .where('paused_until', '>', now)
      .execute()
  ).map((r) => ({ key: r.domain, until: r.paused_until! }));

/** A node's rows, when it stops. */
export const removeDeliveryDestinations = async (db: Db, owner: string): Promise<void> => {
  await db.deleteFrom('delivery_destinations').where('owner', '=', owner).execute();
};

/** What the delivery gates of the running nodes hold for one destination, summed over the nodes. */
export interface DestinationSum {
  /** The recipient domain. */
  domain: string;
  /** The mailbox provider (or MX host, or the domain itself) whose limits apply. */
  provider: string;
  /** The source address; null: the system's. */
  source: string | null;
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

/** The reports written since `since`, summed per recipient domain and destination (for `queue list`); pauses still running at `now`. */
export async function sumDeliveryDestinations(
  db: Db,
  since: number,
  now: number,
  domains: readonly string[],
): Promise<DestinationSum[]> {
  const wanted = new Set(domains);
  const byDomain = new Map<string, DestinationSum & { until: number }>();
  for (const r of await listDeliveryDestinations(db, since)) {
    for (const domain of domainsOf(r).filter((x) => wanted.has(x))) {
      const id = `${domain} ${r.domain}`;
      const d = byDomain.get(id) ?? {
        domain,
        provider: r.provider ?? domain,
        source: r.source,
        active: 0,
        allowed: 0,
        waiting: 0,
        paused_until: null,
        hold: null,
        nodes: 0,
        until: 0,
      };
      d.active += r.active;
      d.allowed = Math.max(d.allowed, r.allowed);
      d.waiting += r.waiting;
      d.nodes++;
      d.until = Math.max(d.until, r.paused_until ?? 0);
      if (r.hold && (!d.hold || RANK[r.hold] > RANK[d.hold])) d.hold = r.hold;
      byDomain.set(id, d);
    }
  }
  return [...byDomain.values()].map(({ until, ...d }) => ({
    ...d,
    paused_until: until > now ? new Date(until).toISOString() : null,
  }));
}

/** A destination (provider and source address) over the running nodes: GET /v1/delivery/providers, `mailsvc delivery status`. */
export interface ProviderSum {
  provider: string;
  /** The source address; null: the system's. */
  source: string | null;
  /** The worst state any node has: paused, then backoff, then normal. */
  state: 'normal' | 'backoff' | 'paused';
  active: number;
  waiting: number;
  /** Transactions allowed at once now, and messages per minute now, per node (the lowest any node has). */
  allowed: number;
  per_minute: number | null;
  /** The configured limits, per node and source address. */
  limit: { concurrency: number | null; per_minute: number | null };
  /** Until when it is paused (ISO 8601), or null. */
  paused_until: string | null;
  last_reply: string | null;
  last_reply_at: string | null;
  domains: string[];
  nodes: number;
}

const STATE_RANK = { normal: 0, backoff: 1, paused: 2 } as const;

export async function sumProviders(db: Db, since: number, now: number): Promise<ProviderSum[]> {
  const byKey = new Map<string, ProviderSum & { until: number; replyAt: number }>();
  for (const r of await listDeliveryDestinations(db, since)) {
    const d = byKey.get(r.domain) ?? {
      provider: r.provider ?? r.domain,
      source: r.source,
      state: 'normal',
      active: 0,
      waiting: 0,
      allowed: Infinity,
      per_minute: null,
      limit: { concurrency: r.limit_concurrency, per_minute: r.limit_per_minute },
      paused_until: null,
      last_reply: null,
      last_reply_at: null,
      domains: [],
      nodes: 0,
      until: 0,
      replyAt: 0,
    };
    d.active += r.active;
    d.waiting += r.waiting;
    d.allowed = Math.min(d.allowed, r.allowed);
    if (r.per_minute !== null)
      d.per_minute = d.per_minute === null ? r.per_minute : Math.min(d.per_minute, r.per_minute);
    d.until = Math.max(d.until, r.paused_until ?? 0);
    const state =
      (r.paused_until ?? 0) > now ? 'paused' : (r.state ?? 'normal') === 'paused' ? 'backoff' : (r.state ?? 'normal');
    if (STATE_RANK[state] > STATE_RANK[d.state]) d.state = state;
    if (r.last_reply && (r.last_reply_at ?? 0) >= d.replyAt) {
      d.last_reply = r.last_reply;
      d.replyAt = r.last_reply_at ?? 0;
    }
    d.domains = [...new Set([...d.domains, ...domainsOf(r)])].sort();
    d.nodes++;
    byKey.set(r.domain, d);
  }
  return [...byKey.values()]
    .map(({ until, replyAt, ...d }) => ({
      ...d,
      paused_until: until > now ? new Date(until).toISOString() : null,
      last_reply_at: replyAt > 0 ? new Date(replyAt).toISOString() : null,
    }))
    .sort((a, b) => a.provider.localeCompare(b.provider) || (a.source ?? '').localeCompare(b.source ?? ''));
}
