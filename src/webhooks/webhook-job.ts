import { setMaxListeners } from 'node:events';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import { Collector, type CommitBatcher } from '../store/infra/commit-batcher.js';
import type { Db, Dialect } from '../store/infra/db.js';
import { listEventsByIds } from '../store/events.js';
import {
  claimWebhookDeliveries,
  failPendingWebhookDeliveries,
  listDueWebhookEndpointIds,
  listWebhookEndpointsByIds,
} from '../store/webhooks.js';
import type { Hand, Next, WorkerJob, Why } from '../workers/kernel.js';
import { EndpointSecrets } from './endpoint-secrets.js';
import { Lanes } from './lanes.js';
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

/** A delivery is leased this long, renewed while its POST runs. */
const LEASE_MS = 30_000;
/** How long a stop lets running attempts finish before it aborts them (their leases go back). */
const STOP_GRACE_MS = 10_000;
/**
 * Outcomes wait this long for company before their commit: far fewer fsyncs under load, and
 * no cost to throughput, since a lane's slot is free as soon as its POST ends.
 */
const RECORD_WINDOW_MS = 10;
/** A drained lane looks for new rows at most this often while its attempts complete. */
const DRAINED_RECLAIM_MS = 20;
/** Endpoints looked at per poll. */
const ENDPOINTS_PER_POLL = 100;

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
  const policy: RetryPolicy = {
    legacySchedule: settings.legacySchedule,
    schedule: settings.schedule,
    maxAgeMs: settings.disableAfterSeconds * 1000,
  };
  const network = { allowPrivateNetworks: settings.allowPrivateNetworks, resolver: deps.resolver };
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const recorder = new Collector<Outcome>(
    deps.batcher,
    (trx, outcomes) =>
      recordAttempts(trx, outcomes, { owner: hand.owner, now: () => clock.now(), policy, log: hand.log }),
    {
      windowMs: RECORD_WINDOW_MS,
      max: 256,
    },
  );
  const abort = new AbortController();
  // Every running POST listens to this one signal (the stop's grace ran out).
  setMaxListeners(0, abort.signal);
  const secrets = new EndpointSecrets(deps.secretKey);
  const lanes = new Lanes(settings.perEndpointConcurrency, settings.concurrency);
  let lastPollAt = 0;

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
          secrets: secrets.active(endpoint, startedAt),
          timestamp: Math.floor(startedAt / 1000),
        },
        { policy: network, timeoutMs, agents, signal: abort.signal },
      );
    } catch (err) {
      // Not the endpoint's doing (an unreadable secret or event): recorded as a failed attempt.
      hand.log.error(
        { err, endpointId: endpoint.id, deliveryId: delivery.id },
        'webhook attempt could not be prepared',
      );
      result = {
        succeeded: false,
        statusCode: null,
        durationMs: 0,
        error: 'internal: the delivery could not be prepared',
        response: null,
      };
    }
    sent();
    // Cut short by a stop, not the endpoint's failure: the row stays in hand, and the kernel gives it back.
    if (abort.signal.aborted && result.error === 'aborted') return;
    deps.metrics?.webhookAttempt(
      result.succeeded ? 'succeeded' : result.statusCode === null ? 'no_response' : 'http_error',
    );
    const fields = {
      endpointId: endpoint.id,
      workspaceId: endpoint.workspace_id,
      deliveryId: delivery.id,
      eventId: event.id,
    };
    if (result.succeeded)
      hand.log.debug({ ...fields, statusCode: result.statusCode, durationMs: result.durationMs }, 'webhook delivered');
    else
      hand.log.warn(
        { ...fields, url: endpoint.url, statusCode: result.statusCode, error: result.error },
        'webhook attempt failed',
      );
    await recorder.add({ job, startedAt, result });
    hand.settle([delivery.id]);
  }

  /** Starts waiting jobs wherever a lane and the node have room. */
  function pump(): void {
    for (let next = hand.stopping ? undefined : lanes.take(); next; next = hand.stopping ? undefined : lanes.take()) {
      const { endpointId, lane: l, job } = next;
      let freed = false;
      const free = () => {
        if (freed) return;
        freed = true;
        const low = lanes.release(l);
        pump();
        if (low) {
          l.wantsMore = true;
          hand.wake();
        }
      };
      hand.run(() =>
        attempt(job, free).finally(() => {
          free();
          lanes.claimed--;
          lanes.dropIfIdle(endpointId, l);
        }),
      );
    }
  }

  /** Claims due rows of one endpoint up to its lane's and the node's room. */
  async function refill(endpointId: string): Promise<void> {
    const l = lanes.lane(endpointId);
    l.wantsMore = false;
    const want = lanes.room(l);
    if (want <= 0 || hand.stopping) return lanes.dropIfIdle(endpointId, l);
    l.refilling = true;
    try {
      l.lastClaimAt = clock.now();
      const rows = await claimWebhookDeliveries(db, dialect, endpointId, hand.lease(), want);
      l.drained = rows.length < want;
      if (rows.length === 0) return;
      hand.hold(rows.map((r) => r.id));
      lanes.claimed += rows.length;
      // The endpoint as of this claim: a rotation or URL change applies from the next claim on.
      const [endpoint] = await listWebhookEndpointsByIds(db, [endpointId]);
      const events = new Map(
        (
          await listEventsByIds(
            db,
            rows.map((r) => r.event_id),
          )
        ).map((e) => [e.id, e]),
      );
      for (const delivery of rows) {
        const event = events.get(delivery.event_id);
        // Without its endpoint or event the row is being deleted (cascade): nothing to send.
        if (endpoint && event) l.waiting.push({ delivery, endpoint, event });
        else {
          lanes.claimed--;
          hand.settle([delivery.id]);
        }
      }
      if (endpoint && endpoint.status !== 'enabled')
        await failPendingWebhookDeliveries(db, endpointId, clock.now(), 'endpoint disabled');
    } finally {
      l.refilling = false;
      pump();
      lanes.dropIfIdle(endpointId, l);
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
      for (const [endpointId, l] of lanes.wanting()) {
        if (!l.drained || now - l.lastClaimAt >= DRAINED_RECLAIM_MS) await refill(endpointId);
      }
      // New events, the poll, or a poll interval since the last search (lanes waking the job
      // must not starve the others): endpoints with due rows whose lanes have room.
      if ((why !== 'wake' || now - lastPollAt >= settings.pollInterval) && !lanes.full) {
        lastPollAt = now;
        for (const endpointId of await listDueWebhookEndpointIds(
          db,
          clock.now(),
          lanes.busyEndpoints(),
          ENDPOINTS_PER_POLL,
        )) {
          if (hand.stopping || lanes.full) break;
          lanes.lane(endpointId).drained = false;
          await refill(endpointId);
        }
      }
      // A drained lane asking for more is looked at again shortly; new events wake the job at
      // once when it is idle, after a short debounce when it is busy (claims in batches).
      const pending = lanes.wanting().length > 0;
      return {
        sleep: pending ? DRAINED_RECLAIM_MS : settings.pollInterval,
        onWork: lanes.claimed > 0 ? 'soon' : 'now',
      };
    },

    halt() {
      return lanes.halt().map((j) => j.delivery.id);
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
