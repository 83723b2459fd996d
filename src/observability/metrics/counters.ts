import { Counter, Histogram, type Registry } from 'prom-client';

/** Accept-to-delivery latency: from a local relay (sub-second) to retries over days. */
const LATENCY_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 3 * 24 * 3600];

/** The counters components increment as things happen (the gauges read at scrape time are elsewhere). */
export function defineEventCounters(registry: Registry) {
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
  // Every label combination shows from the start, so rate() has a zero to start from.
  for (const intake of ['http', 'smtp', 'campaign', 'workflow'] as const)
    for (const type of ['transactional', 'marketing'] as const) accepted.inc({ intake, type }, 0);
  for (const outcome of ['succeeded', 'http_error', 'no_response'] as const) webhooks.inc({ outcome }, 0);
  return { accepted, attempts, latency, webhooks, sessions, throttled, limited };
}
