import { collectDefaultMetrics, Registry } from 'prom-client';
import { domainClass, type DomainClass } from './domain-class.js';
import { defineEventCounters } from './metrics/counters.js';
import { defineQueueGauges, defineReputationGauges, defineStatementCounter } from './metrics/database-gauges.js';
import { defineDestinationGauges } from './metrics/destination-gauges.js';
import { defineBodyGauges, defineMemoryGauges, defineStorageGauges } from './metrics/host-gauges.js';
import type {
  DestinationSample,
  MetricSources,
  ReputationSample,
  StorageSample,
  ThreadMemorySample,
} from './metrics/sources.js';

export type { ThreadMemorySample } from './metrics/sources.js';

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

export const noMetrics: Metrics = {
  emailsAccepted: () => {},
  deliveryAttempt: () => {},
  delivered: () => {},
  webhookAttempt: () => {},
  smtpSession: () => {},
  rateLimited: () => {},
  throttledWait: () => {},
};

export function createMetrics(options: { defaultMetrics?: boolean } = {}): ServerMetrics {
  const registry = new Registry();
  // Event loop lag, heap, GC, CPU and file descriptors, under the same prefix.
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'mailsvc_' });
  const sources: MetricSources = {
    queue: null,
    databaseUp: 1,
    statements: [],
    reputation: null,
    storage: null,
    memory: [],
    bodies: null,
    destinations: null,
  };
  const { accepted, attempts, latency, webhooks, sessions, throttled, limited } = defineEventCounters(registry);
  defineQueueGauges(registry, sources);
  defineStorageGauges(registry, sources);
  defineMemoryGauges(registry, sources);
  defineBodyGauges(registry, sources);
  defineStatementCounter(registry, sources);
  defineReputationGauges(registry, sources);
  defineDestinationGauges(registry, sources);

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    queueDepthFrom: (read) => {
      sources.queue = read;
    },
    databaseStatementsFrom: (read) => {
      sources.statements.push(read);
    },
    threadMemoryFrom: (read) => {
      sources.memory.push(read);
    },
    bodyMemoryFrom: (read) => {
      sources.bodies = read;
    },
    reputationFrom: (read) => {
      sources.reputation = read;
    },
    destinationsFrom: (read) => {
      sources.destinations = read;
    },
    storageFrom: (read) => {
      sources.storage = read;
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
