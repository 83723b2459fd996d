import type { Generated } from 'kysely';

/** What delivery keeps beside the queue: IP pools, warm-up, and what each node's gate holds. */

/** A named set of source addresses that mail leaves from (docs/deliverability.md, IP pools). */
export interface IpPoolsTable {
  id: string;
  name: string;
  created_at: number;
  updated_at: number;
}

/** One source address of a pool, with the EHLO name it greets with (matching its PTR). */
export interface IpPoolAddressesTable {
  pool_id: string;
  address: string;
  ehlo: string;
  position: number;
}

/** An address in warm-up (docs/deliverability.md, Warm-up). */
export interface IpWarmupsTable {
  address: string;
  started_at: number;
  /** JSON array of daily caps per provider; null: the default schedule (delivery.warmup). */
  schedule: string | null;
}

/** Messages an address in warm-up sent to one provider on one warm-up day. */
export interface WarmupCountsTable {
  address: string;
  provider: string;
  period_start: number;
  count: number;
}

/** What one node's delivery gate holds for one destination, written a few times a minute. */
export interface DeliveryDestinationsTable {
  /** The node's lease owner id. */
  owner: string;
  domain: string;
  active: number;
  allowed: number;
  waiting: number;
  paused_until: number | null;
  hold: 'paused' | 'concurrency' | 'rate' | null;
  updated_at: number;
  /** The mailbox provider (or MX host, or domain of its own) the destination's limits apply to. */
  provider: Generated<string | null>;
  /** The source address; null: the system's. */
  source: Generated<string | null>;
  /** Recipient domains lately delivered through it, space-separated. */
  domains: Generated<string | null>;
  state: Generated<'normal' | 'backoff' | 'paused' | null>;
  /** Messages per minute allowed now (lowered in back-off). */
  per_minute: Generated<number | null>;
  limit_concurrency: Generated<number | null>;
  limit_per_minute: Generated<number | null>;
  last_reply: Generated<string | null>;
  last_reply_at: Generated<number | null>;
}
