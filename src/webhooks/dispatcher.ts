import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { hostname } from 'node:os';
import type { Config } from '../config/schema.js';
import type { Clock } from '../shared/clock.js';
import { decryptSecret } from '../shared/crypto.js';
import type { DnsResolver } from '../shared/dns.js';
import type { Logger } from '../shared/logger.js';
import { newPrefixedId } from '../shared/ids.js';
import { CommitBatcher } from '../store/commit-batcher.js';
import type { Db, Dialect } from '../store/db.js';
import { listEventsByIds } from '../store/events.js';
import type { EventRow, WebhookDelivery, WebhookEndpoint } from '../store/tables.js';
import {
  claimWebhookDeliveries,
  failPendingWebhookDeliveries,
  findWebhookDeliveryById,
  findWebhookEndpoint,
  listDueWebhookEndpointIds,
  listWebhookEndpointsByIds,
  releaseWebhookDeliveries,
  saveWebhookAttempt,
  updateWebhookDelivery,
  updateWebhookEndpoint,
} from '../store/webhooks.js';
import { endpointHealthAfter, nextAttemptAt, type RetryPolicy } from './retry-policy.js';
import { sendWebhook, type AttemptResult } from './send-webhook.js';

export interface DispatcherDeps {
  db: Db;
  dialect: Dialect;
  config: Config;
  clock: Clock;
  logger: Logger;
  resolver: DnsResolver;
  secretKey: Buffer;
}

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

/** One endpoint's share of this node: attempts running and claimed jobs waiting for a slot. */
interface Lane {
  running: number;
  waiting: Job[];
}

/** How long stop() waits for running attempts before aborting them (their leases are given back). */
const STOP_GRACE_MS = 10_000;
/** Endpoints looked at per claim cycle. */
const ENDPOINTS_PER_CYCLE = 100;

/**
 * The webhook dispatcher: claims due outbox rows with leases, sends each as one signed POST,
 * and records every attempt with the delivery's next state in one transaction (group commit).
 *
 * Each endpoint has a lane: at most `perEndpointConcurrency` attempts run at once and at most
 * as many more are claimed ahead, so a slow endpoint holds only its own lane while the others
 * keep flowing. A claimed job waits at most about one attempt (≤ timeout) before it starts,
 * which the lease (two timeouts and a margin) covers; an owner that dies leaves leases that
 * expire and are claimed again (at-least-once).
 */
export function createWebhookDispatcher(deps: DispatcherDeps): WebhookDispatcher {
  const { db, dialect, config, clock, logger } = deps;
  const settings = config.webhooks;
  const log = logger.child({ component: 'webhooks' });
  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const timeoutMs = settings.timeoutSeconds * 1000;
  const leaseMs = 2 * timeoutMs + 30_000;
  const perEndpoint = settings.perEndpointConcurrency;
  const policy: RetryPolicy = {
    legacySchedule: settings.legacySchedule,
    schedule: settings.schedule,
    maxAgeMs: settings.disableAfterSeconds * 1000,
  };
  const network = { allowPrivateNetworks: settings.allowPrivateNetworks, resolver: deps.resolver };
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const batcher = new CommitBatcher(db);
  const abort = new AbortController();

  const lanes = new Map<string, Lane>();
  const running = new Set<Promise<void>>();
  let claimed = 0; // running + waiting, across lanes
  let started = false;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let cycling: Promise<void> | null = null;
  let again = false;

  const lane = (endpointId: string): Lane => {
    let l = lanes.get(endpointId);
    if (!l) lanes.set(endpointId, (l = { running: 0, waiting: [] }));
    return l;
  };

  const activeSecrets = (endpoint: WebhookEndpoint, now: number): string[] => {
    const secrets = [decryptSecret(deps.secretKey, endpoint.secret_sealed)];
    if (endpoint.previous_secret_sealed && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > now) {
      secrets.push(decryptSecret(deps.secretKey, endpoint.previous_secret_sealed));
    }
    return secrets;
  };

  /** Writes an attempt's outcome: the attempt, the delivery's next state, the endpoint's health. */
  async function record(trx: Db, job: Job, startedAt: number, result: AttemptResult): Promise<void> {
    const now = clock.now();
    const delivery = await findWebhookDeliveryById(trx, job.delivery.id);
    const endpoint = await findWebhookEndpoint(trx, job.endpoint.workspace_id, job.endpoint.id);
    if (!delivery || !endpoint) return; // removed while in flight
    const attempt = delivery.attempt_count + 1;
    const runAttempts = delivery.run_attempts + 1;
    const health = endpointHealthAfter(policy, endpoint, result, now);
    const retryAt = result.succeeded || health.disable ? null : nextAttemptAt(policy, endpoint.surface, runAttempts, delivery.run_started_at, now);
    await saveWebhookAttempt(trx, {
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
    });
    // Our lease expired and another node took the row: its attempt will write the state.
    if (delivery.lease_owner === owner) {
      await updateWebhookDelivery(trx, delivery.id, {
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
    }
    if (result.succeeded) {
      // Under load, successes come by the hundred a second: the endpoint row is written when
      // its streak ends and otherwise at most once a second.
      if (endpoint.failing_since !== null || endpoint.last_success_at === null || now - endpoint.last_success_at > 1000) {
        await updateWebhookEndpoint(trx, endpoint.id, { failing_since: null, last_success_at: now });
      }
      return;
    }
    await updateWebhookEndpoint(trx, endpoint.id, {
      failing_since: health.failingSince,
      last_failure_at: now,
      ...(health.disable && endpoint.status === 'enabled'
        ? { status: 'disabled' as const, disabled_reason: health.disable, disabled_at: now, updated_at: now }
        : {}),
    });
    if (health.disable && endpoint.status === 'enabled') {
      await failPendingWebhookDeliveries(trx, endpoint.id, now, `endpoint disabled (${health.disable})`);
      log.warn({ endpointId: endpoint.id, workspaceId: endpoint.workspace_id, reason: health.disable }, 'webhook endpoint disabled');
    }
  }

  /** A job whose endpoint was disabled after the claim: ended without an attempt. */
  async function cancel(trx: Db, job: Job): Promise<void> {
    const now = clock.now();
    await updateWebhookDelivery(trx, job.delivery.id, {
      status: 'failed',
      lease_owner: null,
      lease_until: null,
      last_error: 'endpoint disabled',
      updated_at: now,
      completed_at: now,
    });
  }

  async function run(job: Job): Promise<void> {
    const { delivery, endpoint, event } = job;
    if (endpoint.status !== 'enabled') {
      await batcher.run((trx) => cancel(trx, job));
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
    if (stopping && abort.signal.aborted && result.error === 'aborted') {
      // Cut short by shutdown: not the endpoint's failure. The lease goes back; it will be sent again.
      await releaseWebhookDeliveries(db, owner, [delivery.id]);
      return;
    }
    const fields = { endpointId: endpoint.id, workspaceId: endpoint.workspace_id, deliveryId: delivery.id, eventId: event.id };
    if (result.succeeded) log.debug({ ...fields, statusCode: result.statusCode, durationMs: result.durationMs }, 'webhook delivered');
    else log.info({ ...fields, statusCode: result.statusCode, error: result.error }, 'webhook attempt failed');
    await batcher.run((trx) => record(trx, job, startedAt, result));
  }

  /** Starts waiting jobs wherever a lane and the node have room. */
  function pump(): void {
    for (const [endpointId, l] of lanes) {
      while (l.running < perEndpoint && running.size < settings.concurrency && l.waiting.length > 0) {
        const job = l.waiting.shift()!;
        l.running++;
        const p: Promise<void> = run(job)
          .catch((err: unknown) => log.error({ err, deliveryId: job.delivery.id }, 'webhook attempt could not be recorded'))
          .finally(() => {
            running.delete(p);
            l.running--;
            claimed--;
            if (l.running === 0 && l.waiting.length === 0) lanes.delete(endpointId);
            if (stopping) return;
            pump();
            if (l.waiting.length < perEndpoint) wake();
          });
        running.add(p);
      }
    }
  }

  /** One claim cycle; true when it claimed something. */
  async function cycle(): Promise<boolean> {
    let room = 2 * settings.concurrency - claimed;
    if (room <= 0) return false;
    const now = clock.now();
    const full = [...lanes].filter(([, l]) => l.running + l.waiting.length >= 2 * perEndpoint).map(([id]) => id);
    const due = await listDueWebhookEndpointIds(db, now, full, ENDPOINTS_PER_CYCLE);
    if (due.length === 0) return false;
    const endpoints = new Map((await listWebhookEndpointsByIds(db, due)).map((e) => [e.id, e]));
    let any = false;
    for (const endpointId of due) {
      if (room <= 0 || stopping) break;
      const endpoint = endpoints.get(endpointId);
      if (!endpoint) continue;
      const l = lane(endpointId);
      const want = Math.min(2 * perEndpoint - l.running - l.waiting.length, room);
      if (want <= 0) continue;
      const rows = await claimWebhookDeliveries(db, dialect, { endpointId, owner, now, leaseUntil: now + leaseMs, limit: want });
      if (rows.length === 0) continue;
      const target = lane(endpointId); // the lane may have emptied and gone during the claim
      any = true;
      room -= rows.length;
      claimed += rows.length;
      const events = new Map((await listEventsByIds(db, rows.map((r) => r.event_id))).map((e) => [e.id, e]));
      for (const delivery of rows) {
        const event = events.get(delivery.event_id);
        if (event) target.waiting.push({ delivery, endpoint, event });
        else claimed--; // the event was pruned: the row goes with it (foreign key cascade)
      }
      if (endpoint.status !== 'enabled') await failPendingWebhookDeliveries(db, endpointId, now, 'endpoint disabled');
    }
    pump();
    return any;
  }

  function wake(): void {
    if (!started || stopping) return;
    if (cycling) {
      again = true;
      return;
    }
    cycling = (async () => {
      // Let the completions of this turn of the event loop share one cycle.
      await new Promise<void>((r) => setImmediate(r));
      try {
        do {
          again = false;
          if (await cycle()) again = true;
        } while (again && !stopping);
      } catch (err) {
        log.error({ err }, 'webhook claim failed');
      } finally {
        cycling = null;
      }
    })();
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
      await cycling;
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
