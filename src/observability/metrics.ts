import { readFileSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { IsolateMemory } from '../shared/isolate-memory.js';
import { domainClass, type DomainClass } from './domain-class.js';

/**
 * Prometheus instrumentation, as a narrow interface the components call. Each running server
 * has its own registry (tests run several servers in one process); the CLI uses `noMetrics`.
 */

type IntakeLabel = 'http' | 'smtp' | 'campaign' | 'workflow';
type DeliveryOutcomeLabel = 'delivered' | 'deferred' | 'bounced' | 'failed';
type WebhookOutcomeLabel = 'succeeded' | 'http_error' | 'no_response';
type SmtpListenerLabel = 'submission' | 'submission_tls' | 'inbound';

export interface Metrics {
  emailsAccepted(intake: IntakeLabel, type: 'transactional' | 'marketing', count?: number): void;
  /** One recipient's attempt; `mxHost` refines the class of custom domains hosted by a big provider. */
  deliveryAttempt(outcome: DeliveryOutcomeLabel, recipient: string, mxHost: string | null): void;
  /** Seconds from acceptance (or the scheduled time) to the delivering attempt. */
  delivered(latencySeconds: number): void;
  webhookAttempt(outcome: WebhookOutcomeLabel): void;
  smtpSession(listener: SmtpListenerLabel): void;
  rateLimited(surface: 'http' | 'smtp', operation: string): void;
  /** A delivery waited for its destination's limit: `hold` says which (concurrency, rate, or a slow-down pause). */
  throttledWait(domain: string, hold: 'concurrency' | 'rate' | 'paused'): void;
}

export interface ServerMetrics extends Metrics {
  readonly registry: Registry;
  /** Where the queue-depth gauge reads from at scrape time. */
  queueDepthFrom(read: () => Promise<Record<string, number>>): void;
  /** Adds a source of the database statement counter (each store's own count: the main thread's, each delivery thread's), read at scrape time. */
  databaseStatementsFrom(read: () => number): void;
  /** Where the reputation gauges read from at scrape time: one entry per sending domain the guard has judged. */
  reputationFrom(read: () => Promise<ReputationSample[]>): void;
  /** Where the delivery gate's gauges read from at scrape time: every destination it holds state for. */
  destinationsFrom(read: () => DestinationSample[]): void;
  /** Where the storage gauges read from at scrape time: each file system the server writes to. */
  storageFrom(read: () => StorageSample[]): void;
  /** Adds a source of the per-thread memory gauges (the main thread and its pool; the delivery threads and theirs), read at scrape time. */
  threadMemoryFrom(read: () => Promise<ThreadMemorySample[]>): void;
  /** Where the gauges of large request bodies read from (http.bodyMemory): bytes held now, and bodies waiting for room. */
  bodyMemoryFrom(read: () => { held: number; waiting: number }): void;
  /** The text exposition of every metric. */
  render(): Promise<string>;
  readonly contentType: string;
}

/** One thread's isolate, named for what it is: `main`, `main-pool-0`, `delivery-0`, `delivery-0-pool-0`. */
export interface ThreadMemorySample {
  thread: string;
  memory: IsolateMemory;
}

interface StorageSample {
  path: string;
  freeBytes: number;
  minFreeBytes: number;
}

interface ReputationSample {
  workspace_id: string;
  domain: string;
  state: 'sending' | 'warning' | 'paused';
  /** Percent. */
  bounce_rate: number;
  complaint_rate: number;
  held: number;
}

/** One destination as the delivery gate sees it (delivery/gate.ts). */
interface DestinationSample {
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

/** The destination class of a gate's destination: its provider's, else its first recipient domain's. */
const PROVIDER_CLASS: Record<string, DomainClass> = {
  google: 'gmail',
  microsoft: 'microsoft',
  microsoft365: 'microsoft',
  yahoo: 'yahoo',
  apple: 'apple',
};
const classOf = (d: DestinationSample): DomainClass =>
  (d.provider && PROVIDER_CLASS[d.provider]) || domainClass(`@${d.domains?.[0] ?? d.domain}`, null);

export const noMetrics: Metrics = {
  emailsAccepted: () => {},
  deliveryAttempt: () => {},
  delivered: () => {},
  webhookAttempt: () => {},
  smtpSession: () => {},
  rateLimited: () => {},
  throttledWait: () => {},
};

/** Accept-to-delivery latency: from a local relay (sub-second) to retries over days. */
const LATENCY_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 3 * 24 * 3600];

export function createMetrics(options: { defaultMetrics?: boolean } = {}): ServerMetrics {
  const registry = new Registry();
  // Event loop lag, heap, GC, CPU and file descriptors, under the same prefix.
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'mailsvc_' });

  const accepted = new Counter({
    name: 'mailsvc_emails_accepted_total',
    help: 'Emails accepted for sending, by intake and type',
    labelNames: ['intake', 'type'] as const,
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'mailsvc_delivery_attempts_total',
    help: 'Delivery attempts per recipient, by outcome and destination class (gmail, microsoft, yahoo, apple, other)',
    labelNames: ['outcome', 'domain_class'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'mailsvc_delivery_latency_seconds',
    help: 'Seconds from acceptance to delivery',
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const webhooks = new Counter({
    name: 'mailsvc_webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const sessions = new Counter({
    name: 'mailsvc_smtp_sessions_total',
    help: 'SMTP connections accepted, by listener',
    labelNames: ['listener'] as const,
    registers: [registry],
  });
  const throttled = new Counter({
    name: 'mailsvc_delivery_throttled_waits_total',
    help: 'Deliveries that waited for their destination limit (delivery.domainLimits / defaultDomainLimit), by destination class and hold (concurrency, rate, paused after a slow-down reply)',
    labelNames: ['domain_class', 'hold'] as const,
    registers: [registry],
  });
  const limited = new Counter({
    name: 'mailsvc_rate_limited_total',
    help: 'Requests refused by a rate limit, by surface and bucket',
    labelNames: ['surface', 'operation'] as const,
    registers: [registry],
  });

  let readQueue: (() => Promise<Record<string, number>>) | null = null;
  new Gauge({
    name: 'mailsvc_queue_depth',
    help: 'Recipients waiting in the delivery queue, by status (read from the database at scrape time)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      if (!readQueue) return;
      this.reset();
      // The database down is when the other metrics matter most: this one goes missing, the
      // scrape does not fail (mailsvc_database_up says why).
      let depth: Record<string, number>;
      try {
        depth = await readQueue();
        databaseUp = 1;
      } catch {
        databaseUp = 0;
        return;
      }
      for (const [status, n] of Object.entries(depth)) this.set({ status }, n);
    },
  });
  let databaseUp = 1;
  new Gauge({
    name: 'mailsvc_database_up',
    help: "1 when the database answered the scrape's queue-depth query, 0 when it failed (unreachable, dropped, busy past its timeout)",
    registers: [registry],
    collect() {
      this.set(databaseUp);
    },
  });
  let readStorage: (() => StorageSample[]) | null = null;
  const storageGauge = (name: string, help: string, value: (s: StorageSample) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['path'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const s of readStorage?.() ?? []) this.set({ path: s.path }, value(s));
      },
    });
  storageGauge(
    'mailsvc_storage_free_bytes',
    "Free bytes on each file system the server writes to (the SQLite database's, dataDir)",
    (s) => s.freeBytes,
  );
  storageGauge(
    'mailsvc_storage_min_free_bytes',
    'The reserve (storage.minFreeBytes) below which new mail is refused, per file system',
    (s) => s.minFreeBytes,
  );

  // Memory the way it is spent: each isolate's heap (and young generation) and external
  // memory, and what the process holds beyond them (native: SQLite's page cache, TLS, malloc).
  const readMemory: Array<() => Promise<ThreadMemorySample[]>> = [];
  let threadSamples: Promise<ThreadMemorySample[]> | null = null;
  /** One read per scrape for both gauges. */
  const memorySamples = () =>
    (threadSamples ??= Promise.all(readMemory.map((read) => read().catch(() => [])))
      .then((lists) => lists.flat())
      .finally(() => setTimeout(() => (threadSamples = null), 100).unref()));
  const THREAD_KINDS: Record<string, keyof IsolateMemory> = {
    heap_used: 'heapUsed',
    heap_total: 'heapTotal',
    heap_young: 'young',
    heap_limit: 'heapLimit',
    external: 'external',
    array_buffers: 'arrayBuffers',
  };
  new Gauge({
    name: 'mailsvc_thread_memory_bytes',
    help: "Memory of each thread's V8 isolate (main, main-pool-N, delivery-N, delivery-N-pool-N), by kind: heap_total, heap_used, heap_young (the young generation as reserved), heap_limit, external (Buffers and other memory outside the heap), array_buffers",
    labelNames: ['thread', 'kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await memorySamples())
        for (const [kind, field] of Object.entries(THREAD_KINDS)) this.set({ thread: s.thread, kind }, s.memory[field]);
    },
  });
  new Gauge({
    name: 'mailsvc_process_memory_bytes',
    help: "Memory of the whole process, by kind: rss, peak_rss (VmHWM, Linux), native (rss beyond every isolate's heap and external memory: SQLite's page cache, TLS, malloc's slack, code)",
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const rss = process.memoryUsage.rss();
      const isolates = (await memorySamples()).reduce((sum, s) => sum + s.memory.heapTotal + s.memory.external, 0);
      this.set({ kind: 'rss' }, rss);
      this.set({ kind: 'native' }, Math.max(0, rss - isolates));
      const peak = peakRss();
      if (peak !== null) this.set({ kind: 'peak_rss' }, peak);
    },
  });

  // Large request bodies (http.bodyMemory): waiting bodies that stay are a budget too small for the traffic.
  let readBodies: (() => { held: number; waiting: number }) | null = null;
  new Gauge({
    name: 'mailsvc_http_body_memory_bytes',
    help: 'Bytes of large messages (1 MB and over: API request bodies, SMTP submissions) being handled now, within http.bodyMemory',
    registers: [registry],
    collect() {
      this.set(readBodies?.().held ?? 0);
    },
  });
  new Gauge({
    name: 'mailsvc_http_bodies_waiting',
    help: 'Large messages waiting for room in http.bodyMemory (API bodies before they are read, SMTP submissions once read)',
    registers: [registry],
    collect() {
      this.set(readBodies?.().waiting ?? 0);
    },
  });

  const readStatements: Array<() => number> = [];
  let statementsSeen = 0;
  new Counter({
    name: 'mailsvc_db_statements_total',
    help: 'Statements sent to the database, BEGIN and COMMIT included (on PostgreSQL, one network round trip each)',
    registers: [registry],
    collect() {
      const n = readStatements.reduce((sum, read) => sum + read(), 0);
      this.inc(Math.max(0, n - statementsSeen));
      statementsSeen = n;
    },
  });
  // Sending domains are the operator's own (a handful), so they make a bounded label set.
  let readReputation: (() => Promise<ReputationSample[]>) | null = null;
  let reputation: Promise<ReputationSample[]> | null = null;
  /** One read per scrape for the four gauges. */
  const samples = () => {
    // A database fault leaves these out of the scrape rather than failing it (mailsvc_database_up).
    reputation ??= (readReputation ? readReputation().catch(() => []) : Promise.resolve([])).finally(() =>
      setTimeout(() => (reputation = null), 100).unref(),
    );
    return reputation;
  };
  const reputationGauge = (name: string, help: string, value: (s: ReputationSample) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['workspace', 'domain'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const s of await samples()) this.set({ workspace: s.workspace_id, domain: s.domain }, value(s));
      },
    });
  reputationGauge(
    'mailsvc_reputation_bounce_rate',
    'Hard-bounce rate of a sending domain over the guard window, in percent',
    (s) => s.bounce_rate,
  );
  reputationGauge(
    'mailsvc_reputation_complaint_rate',
    'Complaint rate of a sending domain over the guard window, in percent',
    (s) => s.complaint_rate,
  );
  reputationGauge(
    'mailsvc_reputation_paused',
    '1 while the reputation guard holds the marketing mail of a sending domain',
    (s) => (s.state === 'paused' ? 1 : 0),
  );
  reputationGauge(
    'mailsvc_reputation_held',
    'Recipients of marketing mail held for a paused sending domain',
    (s) => s.held,
  );

  // The gate's state, summed by destination class: mail that waits while nothing runs and
  // nothing is paused is a stall, and shows here instead of only in the queue's growth.
  let readDestinations: (() => DestinationSample[]) | null = null;
  const destinationGauge = (name: string, help: string, value: (d: DestinationSample) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['domain_class'] as const,
      registers: [registry],
      collect() {
        this.reset();
        const sums = new Map<DomainClass, number>();
        for (const d of readDestinations?.() ?? []) {
          const c = classOf(d);
          sums.set(c, (sums.get(c) ?? 0) + value(d));
        }
        for (const [domain_class, n] of sums) this.set({ domain_class }, n);
      },
    });
  destinationGauge(
    'mailsvc_delivery_destination_active',
    'SMTP transactions running now, by destination class',
    (d) => d.active,
  );
  destinationGauge(
    'mailsvc_delivery_destination_allowed',
    'SMTP transactions allowed at once now (the limit, lowered while a destination throttles us), by destination class',
    (d) => d.allowed,
  );
  destinationGauge(
    'mailsvc_delivery_destination_waiting',
    'Claimed deliveries waiting for a slot of their destination, by destination class',
    (d) => d.waiting,
  );
  destinationGauge(
    'mailsvc_delivery_destination_paused',
    'Destinations paused after a slow-down reply, by destination class',
    (d) => (d.pausedUntil > Date.now() ? 1 : 0),
  );
  // Adaptive shaping by provider and source address: known providers by name, every other MX host as "other".
  new Gauge({
    name: 'mailsvc_delivery_provider_state',
    help: 'Destinations (a mailbox provider seen from one source address) in each state: normal, backoff (limits lowered after slow-down replies), paused',
    labelNames: ['provider', 'source', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const counts = new Map<string, { provider: string; source: string; state: string; n: number }>();
      for (const d of readDestinations?.() ?? []) {
        const provider = d.provider && d.named ? d.provider : 'other';
        const source = d.source ?? 'default';
        const state = d.pausedUntil > Date.now() ? 'paused' : (d.state ?? 'normal');
        const id = `${provider} ${source} ${state}`;
        const c = counts.get(id) ?? { provider, source, state, n: 0 };
        c.n++;
        counts.set(id, c);
      }
      for (const c of counts.values()) this.set({ provider: c.provider, source: c.source, state: c.state }, c.n);
    },
  });

  // Every label combination shows from the start, so rate() has a zero to start from.
  for (const intake of ['http', 'smtp', 'campaign', 'workflow'] as const)
    for (const type of ['transactional', 'marketing'] as const) accepted.inc({ intake, type }, 0);
  for (const outcome of ['succeeded', 'http_error', 'no_response'] as const) webhooks.inc({ outcome }, 0);

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    queueDepthFrom: (read) => {
      readQueue = read;
    },
    databaseStatementsFrom: (read) => {
      readStatements.push(read);
    },
    threadMemoryFrom: (read) => {
      readMemory.push(read);
    },
    bodyMemoryFrom: (read) => {
      readBodies = read;
    },
    reputationFrom: (read) => {
      readReputation = read;
    },
    destinationsFrom: (read) => {
      readDestinations = read;
    },
    storageFrom: (read) => {
      readStorage = read;
    },
    emailsAccepted: (intake, type, count = 1) => accepted.inc({ intake, type }, count),
    deliveryAttempt: (outcome, recipient, mxHost) =>
      attempts.inc({ outcome, domain_class: domainClass(recipient, mxHost) satisfies DomainClass }),
    delivered: (seconds) => latency.observe(Math.max(0, seconds)),
    webhookAttempt: (outcome) => webhooks.inc({ outcome }),
    smtpSession: (listener) => sessions.inc({ listener }),
    rateLimited: (surface, operation) => limited.inc({ surface, operation }),
    throttledWait: (domain, hold) => throttled.inc({ domain_class: domainClass(`@${domain}`, null), hold }),
  };
}

/** The process's peak resident memory (VmHWM), in bytes; null where /proc is not there. */
function peakRss(): number | null {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : null;
  } catch {
    return null;
  }
}
