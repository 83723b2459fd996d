import { setMaxListeners } from 'node:events';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../shared/clock.js';
import { decryptSecret } from '../shared/crypto.js';
import type { DnsResolver } from '../shared/dns.js';
import { Collector, type CommitBatcher } from '../store/commit-batcher.js';
import type { Db, Dialect } from '../store/db.js';
import { listEventsByIds } from '../store/events.js';
import { claimWebhookDeliveries, failPendingWebhookDeliveries, listDueWebhookEndpointIds, listWebhookEndpointsByIds, type WebhookEndpoint } from '../store/webhooks.js';
import type { Hand, Next, WorkerJob, Why } from '../workers/kernel.js';
import { recordAttempts, type Outcome, type WebhookJob } from './record-attempts.js';
import type { RetryPolicy } from './retry-policy.js';
import { sendWebhook, type AttemptResult } from './send-webhook.js';

interface WebhookJobDeps {
  db: Db;
  dialect: Dialect;
  settings: Config['webhooks'];
  clock: Clock;
  secretKey: Buffer;
  /** Webhook URLs resolve through the configured resolver (delivery.dnsServers). */
  resolver: DnsResolver;
  batcher: CommitBatcher;
  metrics?: Metrics | undefined;
}

/** One endpoint's share of this node. */
interface Lane {
  running: number;
  /** Claimed jobs waiting for a slot. */
  waiting: WebhookJob[];
  /** Its POSTs ended and it is low on waiting jobs: refill it at the next pass. */
  wantsMore: boolean;
  /** A claim for it is in progress: it must stay in the map, or what it claims is never started. */
  refilling: boolean;
  /** The last claim found fewer due rows than it asked for. */
  drained: boolean;
  lastClaimAt: number;
}

/** A delivery is leased this long, renewed while its POST runs. */
const LEASE_MS = 30_000;
/** How long a stop lets running attempts finish before it aborts them (their leases go back). */
const STOP_GRACE_MS = 10_000;
/** A lane claims up to this many times its concurrency ahead, so claims come in batches. */
const PREFETCH_FACTOR = 4;
/**
 * Outcomes wait this long for company before their commit: far fewer fsyncs under load, and
 * no cost to throughput, since a lane's slot is free as soon as its POST ends.
 */
const RECORD_WINDOW_MS = 10;
/** A drained lane looks for new rows at most this often while its attempts complete. */
const DRAINED_RECLAIM_MS = 20;
/** Endpoints looked at per poll. */
const ENDPOINTS_PER_POLL = 100;
const SECRET_CACHE_SIZE = 1000;

/**
 * The webhook dispatcher, a job on the worker kernel: claims due outbox rows, sends each as
 * one signed POST, and records every attempt with the delivery's next state (group commit).
 *
 * What is its own: each endpoint has a lane, with at most `perEndpointConcurrency` POSTs at
 * once and a few times as many claimed ahead, so a slow endpoint holds only its own lane while
 * the others keep flowing. A lane whose POSTs end asks for more; new events wake the job at
 * once (the kernel's commit watch); the poll finds deliveries whose retry came due.
 */
export function webhookJob(hand: Hand, deps: WebhookJobDeps): WorkerJob {
  const { db, dialect, settings, clock } = deps;
  const timeoutMs = settings.timeoutSeconds * 1000;
  const perEndpoint = settings.perEndpointConcurrency;
  const laneCapacity = (1 + PREFETCH_FACTOR) * perEndpoint;
  const maxClaimed = (1 + PREFETCH_FACTOR) * settings.concurrency;
  const policy: RetryPolicy = { legacySchedule: settings.legacySchedule, schedule: settings.schedule, maxAgeMs: settings.disableAfterSeconds * 1000 };
  const network = { allowPrivateNetworks: settings.allowPrivateNetworks, resolver: deps.resolver };
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const recorder = new Collector<Outcome>(deps.batcher, (trx, outcomes) => recordAttempts(trx, outcomes, { owner: hand.owner, now: () => clock.now(), policy, log: hand.log }), {
    windowMs: RECORD_WINDOW_MS,
    max: 256,
  });
  const abort = new AbortController();
  // Every running POST listens to this one signal (the stop's grace ran out).
  setMaxListeners(0, abort.signal);
  const secrets = new Map<string, string>();
  const lanes = new Map<string, Lane>();
  let sending = 0;
  let claimed = 0; // running + waiting, across lanes
  let lastPollAt = 0;

  const lane = (endpointId: string): Lane => {
    let l = lanes.get(endpointId);
    if (!l) lanes.set(endpointId, (l = { running: 0, waiting: [], wantsMore: false, refilling: false, drained: false, lastClaimAt: 0 }));
    return l;
  };
  const dropIfIdle = (endpointId: string, l: Lane) => {
    if (l.running === 0 && l.waiting.length === 0 && !l.wantsMore && !l.refilling && lanes.get(endpointId) === l) lanes.delete(endpointId);
  };

  const unseal = (sealed: string): string => {
    let plain = secrets.get(sealed);
    if (plain === undefined) {
      if (secrets.size >= SECRET_CACHE_SIZE) secrets.clear();
      secrets.set(sealed, (plain = decryptSecret(deps.secretKey, sealed)));
    }
    return plain;
  };
  const activeSecrets = (endpoint: WebhookEndpoint, now: number): string[] => {
    const list = [unseal(endpoint.secret_sealed)];
    if (endpoint.previous_secret_sealed && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > now) {
      list.push(unseal(endpoint.previous_secret_sealed));
    }
    return list;
  };

  /** One job: the POST, then (with the lane slot already free via `sent`) its recording. */
  async function attempt(job: WebhookJob, sent: () => void): Promise<void> {
    const { delivery, endpoint, event } = job;
    if (endpoint.status !== 'enabled') {
      sent();
      await recorder.add({ job, startedAt: clock.now(), result: null });
      hand.settle([delivery.id]);
      return;
    }
    const startedAt = clock.now();
    let result: AttemptResult;
    try {
      result = await sendWebhook(
        {
          surface: endpoint.surface,
          url: endpoint.url,
          messageId: delivery.id,
          event: { id: event.id, type: event.type, created_at: event.created_at, data: event.data },
          secrets: activeSecrets(endpoint, startedAt),
          timestamp: Math.floor(startedAt / 1000),
        },
        { policy: network, timeoutMs, agents, signal: abort.signal },
      );
    } catch (err) {
      // Not the endpoint's doing (an unreadable secret or event): recorded as a failed attempt.
      hand.log.error({ err, endpointId: endpoint.id, deliveryId: delivery.id }, 'webhook attempt could not be prepared');
      result = { succeeded: false, statusCode: null, durationMs: 0, error: 'internal: the delivery could not be prepared', response: null };
    }
    sent();
    // Cut short by a stop, not the endpoint's failure: the row stays in hand, and the kernel gives it back.
    if (abort.signal.aborted && result.error === 'aborted') return;
    deps.metrics?.webhookAttempt(result.succeeded ? 'succeeded' : result.statusCode === null ? 'no_response' : 'http_error');
    const fields = { endpointId: endpoint.id, workspaceId: endpoint.workspace_id, deliveryId: delivery.id, eventId: event.id };
    if (result.succeeded) hand.log.debug({ ...fields, statusCode: result.statusCode, durationMs: result.durationMs }, 'webhook delivered');
    else hand.log.warn({ ...fields, url: endpoint.url, statusCode: result.statusCode, error: result.error }, 'webhook attempt failed');
    await recorder.add({ job, startedAt, result });
    hand.settle([delivery.id]);
  }

  /** Starts waiting jobs wherever a lane and the node have room. */
  function pump(): void {
    if (hand.stopping) return;
    for (const [endpointId, l] of lanes) {
      while (l.running < perEndpoint && sending < settings.concurrency && l.waiting.length > 0) {
        const job = l.waiting.shift()!;
        l.running++;
        sending++;
        let freed = false;
        const free = () => {
          if (freed) return;
          freed = true;
          l.running--;
          sending--;
          pump();
          // Refill at half the prefetch depth, so each claim brings a batch.
          if (l.waiting.length <= (PREFETCH_FACTOR * perEndpoint) / 2 && !l.wantsMore) {
            l.wantsMore = true;
            hand.wake();
          }
        };
        hand.run(() =>
          attempt(job, free).finally(() => {
            free();
            claimed--;
            dropIfIdle(endpointId, l);
          }),
        );
      }
    }
  }

  /** Claims due rows of one endpoint up to its lane's and the node's room. */
  async function refill(endpointId: string): Promise<void> {
    const l = lane(endpointId);
    l.wantsMore = false;
    const want = Math.min(laneCapacity - l.running - l.waiting.length, maxClaimed - claimed);
    if (want <= 0 || hand.stopping) return dropIfIdle(endpointId, l);
    l.refilling = true;
    try {
      l.lastClaimAt = clock.now();
      const rows = await claimWebhookDeliveries(db, dialect, endpointId, hand.lease(), want);
      l.drained = rows.length < want;
      if (rows.length === 0) return;
      hand.hold(rows.map((r) => r.id));
      claimed += rows.length;
      // The endpoint as of this claim: a rotation or URL change applies from the next claim on.
      const [endpoint] = await listWebhookEndpointsByIds(db, [endpointId]);
      const events = new Map((await listEventsByIds(db, rows.map((r) => r.event_id))).map((e) => [e.id, e]));
      for (const delivery of rows) {
        const event = events.get(delivery.event_id);
        // Without its endpoint or event the row is being deleted (cascade): nothing to send.
        if (endpoint && event) l.waiting.push({ delivery, endpoint, event });
        else {
          claimed--;
          hand.settle([delivery.id]);
        }
      }
      if (endpoint && endpoint.status !== 'enabled') await failPendingWebhookDeliveries(db, endpointId, clock.now(), 'endpoint disabled');
    } finally {
      l.refilling = false;
      pump();
      dropIfIdle(endpointId, l);
    }
  }

  return {
    table: 'webhook_deliveries',
    wakeOn: ['webhook_deliveries'],
    leaseMs: LEASE_MS,
    graceMs: STOP_GRACE_MS,

    async pass(why: Why): Promise<Next> {
      // Lanes whose POSTs ended: refill them (a drained one at most every DRAINED_RECLAIM_MS).
      const now = clock.now();
      for (const [endpointId, l] of [...lanes]) {
        if (l.wantsMore && (!l.drained || now - l.lastClaimAt >= DRAINED_RECLAIM_MS)) await refill(endpointId);
      }
      // New events, the poll, or a poll interval since the last search (lanes waking the job
      // must not starve the others): endpoints with due rows whose lanes have room.
      if ((why !== 'wake' || now - lastPollAt >= settings.pollInterval) && claimed < maxClaimed) {
        lastPollAt = now;
        const busy = [...lanes].filter(([, l]) => l.running + l.waiting.length >= laneCapacity).map(([id]) => id);
        for (const endpointId of await listDueWebhookEndpointIds(db, clock.now(), busy, ENDPOINTS_PER_POLL)) {
          if (hand.stopping || claimed >= maxClaimed) break;
          lane(endpointId).drained = false;
          await refill(endpointId);
        }
      }
      // A drained lane asking for more is looked at again shortly; new events wake the job at
      // once when it is idle, after a short debounce when it is busy (claims in batches).
      const pending = [...lanes.values()].some((l) => l.wantsMore);
      return { sleep: pending ? DRAINED_RECLAIM_MS : settings.pollInterval, onWork: claimed > 0 ? 'soon' : 'now' };
    },

    halt() {
      const waiting = [...lanes.values()].flatMap((l) => l.waiting.splice(0));
      claimed -= waiting.length;
      return waiting.map((j) => j.delivery.id);
    },

    async abort() {
      abort.abort();
    },

    async close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
