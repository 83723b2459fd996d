import { newPrefixedId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import type { Db } from '../store/infra/db.js';
import type { EventRecord } from '../store/events.js';
import {
  failPendingWebhookDeliveries,
  findWebhookDeliveryById,
  findWebhookEndpoint,
  markWebhookEndpointHealthy,
  saveWebhookAttempts,
  updateLeasedWebhookDelivery,
  updateWebhookEndpoint,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '../store/webhooks.js';
import { endpointHealthAfter, nextAttemptAt, type EndpointHealth, type RetryPolicy } from './retry-policy.js';
import type { AttemptResult } from './send-webhook.js';

/** A claimed delivery with what it needs to be sent. */
export interface WebhookJob {
  delivery: WebhookDelivery;
  endpoint: WebhookEndpoint;
  event: EventRecord;
}

/** What to record for a job: its attempt's result, or null when it was cancelled unsent. */
export interface Outcome {
  job: WebhookJob;
  startedAt: number;
  result: AttemptResult | null;
}

interface RecordContext {
  owner: string;
  now: () => number;
  policy: RetryPolicy;
  log: Logger;
}

/**
 * Writes a batch of outcomes in one transaction: each delivery's next state, then all the
 * attempts in one insert. A success clears the endpoint's failure streak (once per endpoint
 * per batch); a failure reads the endpoint's streak and may disable it.
 */
export async function recordAttempts(trx: Db, outcomes: Outcome[], ctx: RecordContext): Promise<void> {
  const attempts: WebhookAttempt[] = [];
  const markedHealthy = new Set<string>();
  for (const outcome of outcomes) {
    const endpointId = outcome.job.endpoint.id;
    const { result } = outcome;
    if (result === null) {
      await cancel(trx, outcome.job, ctx);
      continue;
    }
    const attempt = await settle(trx, { ...outcome, result }, ctx);
    if (!attempt) continue;
    attempts.push(attempt);
    if (result.succeeded) {
      if (!markedHealthy.has(endpointId)) await markWebhookEndpointHealthy(trx, endpointId, ctx.now());
      markedHealthy.add(endpointId);
    } else {
      markedHealthy.delete(endpointId);
    }
  }
  await saveWebhookAttempts(trx, attempts);
}

/** One outcome: the delivery's next state and, for a failure, the endpoint's health. */
async function settle(
  trx: Db,
  { job, startedAt, result }: Outcome & { result: AttemptResult },
  ctx: RecordContext,
): Promise<WebhookAttempt | null> {
  const now = ctx.now();
  const { delivery } = job;
  let endpoint: WebhookEndpoint | undefined = job.endpoint;
  let health: EndpointHealth = { failingSince: null, disable: null };
  if (!result.succeeded) {
    // Failures need the endpoint's current streak; successes (the common case) need no read.
    endpoint = await findWebhookEndpoint(trx, job.endpoint.workspace_id, job.endpoint.id);
    if (!endpoint) return null; // removed while in flight, with its deliveries
    health = endpointHealthAfter(ctx.policy, endpoint, result, now);
  }
  // Nobody else writes a leased row (replay and disabling skip leased rows), so the claimed
  // copy's counters are current.
  const attempt = delivery.attempt_count + 1;
  const runAttempts = delivery.run_attempts + 1;
  const retryAt =
    result.succeeded || health.disable
      ? null
      : nextAttemptAt(ctx.policy, endpoint.surface, runAttempts, delivery.run_started_at, now);
  const updated = await updateLeasedWebhookDelivery(trx, delivery.id, ctx.owner, {
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
      ctx.log.warn(
        { endpointId: endpoint.id, workspaceId: endpoint.workspace_id, reason: disable },
        'webhook endpoint disabled',
      );
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
async function cancel(trx: Db, job: WebhookJob, ctx: RecordContext): Promise<void> {
  const now = ctx.now();
  await updateLeasedWebhookDelivery(trx, job.delivery.id, ctx.owner, {
    status: 'failed',
    lease_owner: null,
    lease_until: null,
    last_error: 'endpoint disabled',
    updated_at: now,
    completed_at: now,
  });
}
