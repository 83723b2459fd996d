import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { hostname } from 'node:os';
import { decryptSecret } from '../shared/crypto.js';
import { newPrefixedId } from '../shared/ids.js';
import { BatchWriter } from '../store/batch-writer.js';
import type { Db } from '../store/db.js';
import { listEventsByIds } from '../store/events.js';
import type { EventRow, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../store/tables.js';
import {
  claimWebhookDeliveries,
  failPendingWebhookDeliveries,
  findWebhookDeliveryById,
  findWebhookEndpoint,
  listDueWebhookEndpointIds,
  listWebhookEndpointsByIds,
  markWebhookEndpointHealthy,
  releaseWebhookDeliveries,
  saveWebhookAttempts,
  updateLeasedWebhookDelivery,
  updateWebhookEndpoint,
} from '../store/webhooks.js';
import { endpointHealthAfter, nextAttemptAt, type EndpointHealth, type RetryPolicy } from './retry-policy.js';
import { sendWebhook, type AttemptResult } from './send-webhook.js';
import type { ServiceDeps } from '../services/deps.js';

export type DispatcherDeps = ServiceDeps;

export interface WebhookDispatcher {
  start(): void;
  /** Looks for due deliveries now rather than at the next poll. */
  wake(): void;
  /** Stops claiming, gives back what was claimed but not started, lets attempts finish. */
  stop(): Promise<void>;
}

interface Job {
  delivery: WebhookDelivery;
  endpoint: WebhookEndpoint;
  event: EventRow;
}

/** What to record for a job: its attempt's result, or null when it was cancelled unsent. */
interface Outcome {
  job: Job;
  startedAt: number;
  result: AttemptResult | null;
}

/** One endpoint's share of this node. */
interface Lane {
  running: number;
  /** Claimed (leased) jobs waiting for a slot. */
  waiting: Job[];
  refilling: boolean;
  /** The last claim found fewer due rows than it asked for. */
  drained: boolean;
  lastClaimAt: number;
}

/** How long stop() waits for running attempts before aborting them (their leases are given back). */
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
 * The webhook dispatcher: claims due outbox rows with leases, sends each as one signed POST,
 * and records every attempt with the delivery's next state in one transaction (group commit).
 *
 * Each endpoint has a lane: at most `perEndpointConcurrency` POSTs run at once and a few times
 * as many are claimed ahead, so a slow endpoint holds only its own lane while the others keep
 * flowing, and claims come in batches. A lane refills itself as its POSTs end; the poll
 * (every `pollInterval` ms) finds endpoints with newly due rows. A claimed job starts only
 * with enough lease left to finish (else it is given back); an owner that dies leaves leases
 * that expire and are claimed again (at-least-once). Outcomes are recorded through a group
 * commit, so a lane's slot is free as soon as its POST ends.
 */
export function createWebhookDispatcher(deps: DispatcherDeps): WebhookDispatcher {
  const { db, dialect, config, clock, logger } = deps;
  const settings = config.webhooks;
  const log = logger.child({ component: 'webhooks' });
  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const timeoutMs = settings.timeoutSeconds * 1000;
  const leaseMs = 2 * timeoutMs + 30_000;
  const perEndpoint = settings.perEndpointConcurrency;
  const laneCapacity = (1 + PREFETCH_FACTOR) * perEndpoint;
  const maxClaimed = (1 + PREFETCH_FACTOR) * settings.concurrency;
  // A job starts only with enough lease left to finish its attempt and record it.
  const minLeaseLeftMs = timeoutMs + 10_000;
  const policy: RetryPolicy = {
    legacySchedule: settings.legacySchedule,
    schedule: settings.schedule,
    maxAgeMs: settings.disableAfterSeconds * 1000,
  };
  const network = { allowPrivateNetworks: settings.allowPrivateNetworks, resolver: deps.resolver };
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const recorder = new BatchWriter<Outcome>(db, (trx, outcomes) => writeOutcomes(trx, outcomes), 256, RECORD_WINDOW_MS);
  const abort = new AbortController();
  // Every running POST listens to this one signal (shutdown).
  setMaxListeners(0, abort.signal);
  const secrets = new Map<string, string>();

  const lanes = new Map<string, Lane>();
  /** Jobs from start to recorded outcome (their lane slot is freed when the POST ends). */
  const running = new Set<Promise<unknown>>();
  let sending = 0;
  const refills = new Set<Promise<void>>();
  let claimed = 0; // running + waiting, across lanes
  let started = false;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | null = null;

  const lane = (endpointId: string): Lane => {
    let l = lanes.get(endpointId);
    if (!l) lanes.set(endpointId, (l = { running: 0, waiting: [], refilling: false, drained: false, lastClaimAt: 0 }));
    return l;
  };
  const dropIfIdle = (endpointId: string, l: Lane) => {
    if (l.running === 0 && l.waiting.length === 0 && !l.refilling && lanes.get(endpointId) === l) lanes.delete(endpointId);
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

  /**
   * Writes a batch of outcomes in one transaction: each delivery's next state, then all the
   * attempts in one insert. A success clears the endpoint's failure streak (once per endpoint
   * per batch); a failure reads the endpoint's streak and may disable it.
   */
  async function writeOutcomes(trx: Db, outcomes: Outcome[]): Promise<void> {
    const attempts: WebhookAttempt[] = [];
    const markedHealthy = new Set<string>();
    for (const outcome of outcomes) {
      const endpointId = outcome.job.endpoint.id;
      const { result } = outcome;
      if (result === null) {
        await cancel(trx, outcome.job);
        continue;
      }
      const attempt = await settle(trx, { ...outcome, result });
      if (!attempt) continue;
      attempts.push(attempt);
      if (result.succeeded) {
        if (!markedHealthy.has(endpointId)) await markWebhookEndpointHealthy(trx, endpointId, clock.now());
        markedHealthy.add(endpointId);
      } else {
        markedHealthy.delete(endpointId);
      }
    }
    await saveWebhookAttempts(trx, attempts);
  }

  /** One outcome: the delivery's next state and, for a failure, the endpoint's health. */
  async function settle(trx: Db, { job, startedAt, result }: Outcome & { result: AttemptResult }): Promise<WebhookAttempt | null> {
    const now = clock.now();
    const { delivery } = job;
    let endpoint: WebhookEndpoint | undefined = job.endpoint;
    let health: EndpointHealth = { failingSince: null, disable: null };
    if (!result.succeeded) {
      // Failures need the endpoint's current streak; successes (the common case) need no read.
      endpoint = await findWebhookEndpoint(trx, job.endpoint.workspace_id, job.endpoint.id);
      if (!endpoint) return null; // removed while in flight, with its deliveries
      health = endpointHealthAfter(policy, endpoint, result, now);
    }
    // Nobody else writes a leased row (replay and disabling skip leased rows), so the claimed
    // copy's counters are current.
    const attempt = delivery.attempt_count + 1;
    const runAttempts = delivery.run_attempts + 1;
    const retryAt = result.succeeded || health.disable ? null : nextAttemptAt(policy, endpoint.surface, runAttempts, delivery.run_started_at, now);
    const updated = await updateLeasedWebhookDelivery(trx, delivery.id, owner, {
      status: result.succeeded ? 'succeeded' : retryAt !== null ? 'pending' : 'failed',
      attempt_count: attempt,
      run_attempts: runAttempts,
      next_attempt_at: retryAt ?? delivery.next_attempt_at,
      lease_owner: null,
      lease_until: null,
      last_attempt_at: startedAt,
      last_status_code: result.statusCode,
      last_duration_ms: result.durationMs,
      last_error: health.disable ? `endpoint disabled (${health.disable})` : result.error,
      last_response: result.response,
      updated_at: now,
      completed_at: retryAt === null ? now : null,
    });
    // Lease lost: our lease expired and another node took the row (its attempt writes the
    // state; ours is still recorded), or the endpoint was removed with its deliveries.
    if (!updated && !(await findWebhookDeliveryById(trx, delivery.id))) return null;
    if (!result.succeeded) {
      const disable = health.disable && endpoint.status === 'enabled' ? health.disable : null;
      await updateWebhookEndpoint(trx, endpoint.id, {
        failing_since: health.failingSince,
        last_failure_at: now,
        ...(disable ? { status: 'disabled' as const, disabled_reason: disable, disabled_at: now, updated_at: now } : {}),
      });
      if (disable) {
        await failPendingWebhookDeliveries(trx, endpoint.id, now, `endpoint disabled (${disable})`);
        log.warn({ endpointId: endpoint.id, workspaceId: endpoint.workspace_id, reason: disable }, 'webhook endpoint disabled');
      }
    }
    return {
      id: newPrefixedId('att_', 12),
      delivery_id: delivery.id,
      endpoint_id: endpoint.id,
      workspace_id: endpoint.workspace_id,
      attempt,
      started_at: startedAt,
      duration_ms: result.durationMs,
      outcome: result.succeeded ? 'succeeded' : 'failed',
      status_code: result.statusCode,
      error: result.error,
      response: result.response,
      next_attempt_at: retryAt,
    };
  }

  /** A job whose endpoint was disabled after the claim: ended without an attempt. */
  async function cancel(trx: Db, job: Job): Promise<void> {
    const now = clock.now();
    await updateLeasedWebhookDelivery(trx, job.delivery.id, owner, {
      status: 'failed',
      lease_owner: null,
      lease_until: null,
      last_error: 'endpoint disabled',
      updated_at: now,
      completed_at: now,
    });
  }

  /** One job: the POST, then (with the lane slot already free via `sent`) its recording. */
  async function run(job: Job, sent: () => void): Promise<void> {
    const { delivery, endpoint, event } = job;
    if (endpoint.status !== 'enabled') {
      sent();
      await recorder.add({ job, startedAt: clock.now(), result: null });
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
          event: { id: event.id, type: event.type, created_at: event.created_at, data: JSON.parse(event.data) as Record<string, unknown> },
          secrets: activeSecrets(endpoint, startedAt),
          timestamp: Math.floor(startedAt / 1000),
        },
        { policy: network, timeoutMs, agents, signal: abort.signal },
      );
    } catch (err) {
      // Not the endpoint's doing (an unreadable secret or event): recorded as a failed attempt.
      log.error({ err, endpointId: endpoint.id, deliveryId: delivery.id }, 'webhook attempt could not be prepared');
      result = { succeeded: false, statusCode: null, durationMs: 0, error: 'internal: the delivery could not be prepared', response: null };
    }
    sent();
    if (stopping && abort.signal.aborted && result.error === 'aborted') {
      // Cut short by shutdown, not the endpoint's failure: the lease goes back for a later attempt.
      await releaseWebhookDeliveries(db, owner, [delivery.id]);
      return;
    }
    deps.metrics?.webhookAttempt(result.succeeded ? 'succeeded' : result.statusCode === null ? 'no_response' : 'http_error');
    const fields = { endpointId: endpoint.id, workspaceId: endpoint.workspace_id, deliveryId: delivery.id, eventId: event.id };
    if (result.succeeded) log.debug({ ...fields, statusCode: result.statusCode, durationMs: result.durationMs }, 'webhook delivered');
    else log.info({ ...fields, statusCode: result.statusCode, error: result.error }, 'webhook attempt failed');
    await recorder.add({ job, startedAt, result });
  }

  /** Starts waiting jobs wherever a lane and the node have room. */
  function pump(): void {
    if (stopping) return;
    const now = clock.now();
    const stale: string[] = [];
    for (const [endpointId, l] of lanes) {
      while (l.running < perEndpoint && sending < settings.concurrency && l.waiting.length > 0) {
        const job = l.waiting.shift()!;
        if ((job.delivery.lease_until ?? 0) - now < minLeaseLeftMs) {
          // Waited too long behind a slow endpoint: give it back rather than risk a double send.
          stale.push(job.delivery.id);
          claimed--;
          continue;
        }
        l.running++;
        sending++;
        let freed = false;
        const free = () => {
          if (freed) return;
          freed = true;
          l.running--;
          sending--;
          if (stopping) return;
          pump();
          // Refill at half the prefetch depth, so each claim brings a batch; a lane that found
          // nothing last time looks again shortly, as new events keep arriving.
          const due = !l.drained || clock.now() - l.lastClaimAt >= DRAINED_RECLAIM_MS;
          if (due && l.waiting.length <= (PREFETCH_FACTOR * perEndpoint) / 2) void refill(endpointId);
        };
        const p: Promise<void> = run(job, free)
          .catch((err: unknown) => log.error({ err, deliveryId: job.delivery.id }, 'webhook attempt could not be recorded'))
          .finally(() => {
            free();
            running.delete(p);
            claimed--;
            dropIfIdle(endpointId, l);
          });
        running.add(p);
      }
    }
    if (stale.length > 0) {
      void releaseWebhookDeliveries(db, owner, stale).catch((err: unknown) => log.error({ err }, 'could not release webhook leases'));
    }
  }

  /** Claims due rows of one endpoint up to its lane's and the node's room. */
  function refill(endpointId: string): Promise<void> {
    const l = lane(endpointId);
    const want = Math.min(laneCapacity - l.running - l.waiting.length, maxClaimed - claimed);
    if (l.refilling || stopping || want <= 0) {
      dropIfIdle(endpointId, l);
      return Promise.resolve();
    }
    l.refilling = true;
    const p = claimInto(endpointId, l, want).finally(() => refills.delete(p));
    refills.add(p);
    return p;
  }

  async function claimInto(endpointId: string, l: Lane, want: number): Promise<void> {
    try {
      const now = clock.now();
      l.lastClaimAt = now;
      const rows = await claimWebhookDeliveries(db, dialect, { endpointId, owner, now, leaseUntil: now + leaseMs, limit: want });
      l.drained = rows.length < want;
      if (rows.length === 0) return;
      claimed += rows.length;
      // The endpoint as of this claim: a rotation or URL change applies from the next claim on.
      const [endpoint] = await listWebhookEndpointsByIds(db, [endpointId]);
      const events = new Map((await listEventsByIds(db, rows.map((r) => r.event_id))).map((e) => [e.id, e]));
      for (const delivery of rows) {
        const event = events.get(delivery.event_id);
        // Without its endpoint or event the row is being deleted (cascade): nothing to send.
        if (endpoint && event) l.waiting.push({ delivery, endpoint, event });
        else claimed--;
      }
      if (endpoint && endpoint.status !== 'enabled') await failPendingWebhookDeliveries(db, endpointId, now, 'endpoint disabled');
    } catch (err) {
      log.error({ err, endpointId }, 'webhook claim failed');
    } finally {
      l.refilling = false;
      pump();
      dropIfIdle(endpointId, l);
    }
  }

  /** Finds endpoints with due rows whose lanes have room, and refills them. */
  async function poll(): Promise<void> {
    if (claimed >= maxClaimed) return;
    const busy = [...lanes].filter(([, l]) => l.refilling || l.running + l.waiting.length >= laneCapacity).map(([id]) => id);
    const due = await listDueWebhookEndpointIds(db, clock.now(), busy, ENDPOINTS_PER_POLL);
    for (const endpointId of due) {
      if (stopping || claimed >= maxClaimed) break;
      lane(endpointId).drained = false;
      await refill(endpointId);
    }
  }

  function wake(): void {
    if (!started || stopping || polling) return;
    polling = poll()
      .catch((err: unknown) => log.error({ err }, 'webhook poll failed'))
      .finally(() => {
        polling = null;
      });
  }

  return {
    start() {
      if (started) return;
      started = true;
      timer = setInterval(wake, settings.pollInterval);
      timer.unref();
      wake();
      log.info({ owner, concurrency: settings.concurrency, perEndpoint }, 'webhook dispatcher started');
    },

    wake,

    async stop() {
      if (!started || stopping) return;
      stopping = true;
      clearInterval(timer);
      await polling;
      await Promise.allSettled([...refills]);
      const waiting = [...lanes.values()].flatMap((l) => l.waiting.splice(0));
      claimed -= waiting.length;
      await releaseWebhookDeliveries(db, owner, waiting.map((j) => j.delivery.id));
      if (running.size > 0) {
        let graceTimer: NodeJS.Timeout | undefined;
        const grace = new Promise<void>((r) => (graceTimer = setTimeout(r, STOP_GRACE_MS)));
        await Promise.race([Promise.allSettled([...running]), grace]);
        clearTimeout(graceTimer);
        abort.abort();
        await Promise.allSettled([...running]);
      }
      agents.http.destroy();
      agents.https.destroy();
      log.info('webhook dispatcher stopped');
    },
  };
}
