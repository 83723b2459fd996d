import type { IsolateMemory } from '../../shared/isolate-memory.js';

/** One thread's isolate, named for what it is: `main`, `main-pool-0`, `delivery-0`, `delivery-0-pool-0`. */
export interface ThreadMemorySample {
  thread: string;
  memory: IsolateMemory;
}

export interface StorageSample {
  path: string;
  freeBytes: number;
  minFreeBytes: number;
}

export interface ReputationSample {
  workspace_id: string;
  domain: string;
  state: 'sending' | 'warning' | 'paused';
  /** Percent. */
  bounce_rate: number;
  complaint_rate: number;
  held: number;
}

/** One destination as the delivery gate sees it (delivery/gate.ts). */
export interface DestinationSample {
  domain: string;
  active: number;
  allowed: number;
  waiting: number;
  pausedUntil: number;
  /** The provider (or MX host, or domain of its own) and source address its limits are kept for. */
  provider?: string | undefined;
  /** `provider` is a mailbox provider's name (a bounded set), not an MX host or a domain. */
  named?: boolean | undefined;
  source?: string | null | undefined;
  domains?: string[] | undefined;
  state?: 'normal' | 'backoff' | 'paused' | undefined;
}

/** Where the gauges read from at scrape time: set by the server's parts after the registry is made. */
export interface MetricSources {
  queue: (() => Promise<Record<string, number>>) | null;
  /** Whether the last queue-depth read answered (mailsvc_database_up). */
  databaseUp: 0 | 1;
  statements: Array<() => number>;
  reputation: (() => Promise<ReputationSample[]>) | null;
  storage: (() => StorageSample[]) | null;
  memory: Array<() => Promise<ThreadMemorySample[]>>;
  bodies: (() => { held: number; waiting: number }) | null;
  destinations: (() => DestinationSample[]) | null;
}

/** Several gauges share one read per scrape: the first starts it, and it is forgotten shortly after. */
export function oncePerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | null = null;
  return () => (pending ??= read().finally(() => setTimeout(() => (pending = null), 100).unref()));
}
