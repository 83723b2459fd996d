import { recordEvents, type NewEvent } from '../events/record-event.js';
import { toIso } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import type { Db } from '../store/infra/db.js';
import { refreshEmailStatuses, type DeliveryAttempt, type QueueStatus } from '../store/emails.js';
import { finishQueueItems, saveDeliveryAttempts } from '../store/queue.js';
import { saveSuppressionIfAbsent } from '../store/suppressions.js';
import { recipientEventData } from './event-data.js';
import type { Outcome, RecipientResult } from './outcome.js';
import { planRetry } from './retry-schedule.js';

interface RecordContext {
  /** The lease owner: only rows this worker still holds are written. */
  owner: string;
  now: number;
  retrySchedule: readonly number[];
  maxQueueLifetime: number;
}

const smtp = (o: { code: number | null; response: string }) => ({ code: o.code, response: o.response });

/** A deferral past the maximum queue lifetime becomes a soft bounce. */
function settle(result: RecipientResult, ctx: RecordContext): { outcome: Outcome; nextAttemptAt?: number } {
  const o = result.outcome;
  if (o.kind !== 'deferred') return { outcome: o };
  // Scheduled mail starts its lifetime when it was due, not when it was accepted.
  const queuedAt = Math.max(result.item.created_at, result.email.scheduled_at ?? 0);
  const plan = planRetry({
    attemptsMade: result.item.attempts + 1,
    now: ctx.now,
    queuedAt,
    schedule: ctx.retrySchedule,
    maxLifetimeSeconds: ctx.maxQueueLifetime,
  });
  if (plan.kind === 'retry') return { outcome: o, nextAttemptAt: plan.at };
  return {
    outcome: {
      kind: 'bounced',
      code: o.code,
      response: `Gave up after ${result.item.attempts + 1} attempts over ${Math.round((ctx.now - queuedAt) / 3600_000)} h; last: ${o.response}`,
      category: 'expired',
      bounceType: 'soft',
      mxHost: o.mxHost,
      tls: o.tls,
    },
  };
}

const STATUS: Record<Outcome['kind'], QueueStatus> = {
  delivered: 'delivered',
  deferred: 'deferred',
  bounced: 'bounced',
  failed: 'failed',
  suppressed: 'suppressed',
};

/**
 * Writes the results of attempts in the caller's transaction: each row's new state, its
 * attempt, its events (in the same transaction, for the webhook outbox), the suppression a
 * hard bounce adds, and the emails' statuses. A batch costs a handful of multi-row
 * statements, not a few per recipient: on PostgreSQL each statement is a round trip.
 * Returns what was written (rows this worker still held, with deferrals past their lifetime
 * turned into bounces), for the metrics.
 */
export async function recordOutcomes(
  trx: Db,
  results: RecipientResult[],
  ctx: RecordContext,
): Promise<Array<{ result: RecipientResult; outcome: Outcome }>> {
  const settled = results.map((result) => ({ result, ...settle(result, ctx) }));
  const mine = await finishQueueItems(
    trx,
    ctx.owner,
    settled.map(({ result, outcome, nextAttemptAt }) => ({
      id: result.item.id,
      status: STATUS[outcome.kind],
      attempted: outcome.kind !== 'suppressed',
      nextAttemptAt,
      code: 'code' in outcome ? outcome.code : null,
      response: responseOf(outcome),
      finished: outcome.kind !== 'deferred',
    })),
    ctx.now,
  );

  const written: Array<{ result: RecipientResult; outcome: Outcome }> = [];
  const attempts: DeliveryAttempt[] = [];
  const events: NewEvent[] = [];
  for (const { result, outcome, nextAttemptAt } of settled) {
    const { email, item } = result;
    // No longer ours (the lease expired and another worker took it): that worker records it.
    if (!mine.has(item.id)) continue;
    written.push({ result, outcome });
    const code = 'code' in outcome ? outcome.code : null;
    if (outcome.kind !== 'suppressed') {
      attempts.push({
        id: newId(),
        queue_item_id: item.id,
        email_id: email.id,
        workspace_id: item.workspace_id,
        started_at: result.startedAt,
        duration_ms: Math.max(0, Math.round(result.durationMs)),
        outcome: outcome.kind,
        category: 'category' in outcome ? outcome.category : null,
        mx_host: 'mxHost' in outcome ? outcome.mxHost : null,
        code,
        response: responseOf(outcome),
        tls: 'tls' in outcome && outcome.tls,
      });
    }

    const event = (type: NewEvent['type'], extra: Record<string, unknown>) =>
      events.push({
        workspaceId: item.workspace_id,
        type,
        emailId: email.id,
        at: ctx.now,
        data: recipientEventData(email, item.recipient, ctx.now, extra),
      });

    switch (outcome.kind) {
      case 'delivered':
        event('email.sent', { smtp: smtp(outcome), mx_host: outcome.mxHost, tls: outcome.tls });
        if (!outcome.relayed)
          event('email.delivered', { smtp: smtp(outcome), mx_host: outcome.mxHost, tls: outcome.tls });
        if (outcome.complained) event('email.complained', { feedback_type: 'abuse' });
        break;
      case 'deferred':
        event('email.delivery_delayed', {
          smtp: smtp(outcome),
          mx_host: outcome.mxHost,
          category: outcome.category,
          attempt: item.attempts + 1,
          next_attempt_at: nextAttemptAt === undefined ? null : toIso(nextAttemptAt),
        });
        break;
      case 'bounced':
        event('email.bounced', {
          smtp: smtp(outcome),
          mx_host: outcome.mxHost,
          bounce: { type: outcome.bounceType, category: outcome.category, message: outcome.response },
        });
        // A hard bounce means the address does not exist: never send to it again. Simulated
        // bounces (test keys, simulator addresses) leave the real list alone.
        if (outcome.bounceType === 'hard' && !email.test && !outcome.simulated) {
          await saveSuppressionIfAbsent(trx, {
            workspace_id: item.workspace_id,
            address: item.recipient.toLowerCase(),
            scope: 'all',
            reason: 'hard_bounce',
            detail: outcome.response.slice(0, 1000),
            email_id: email.id,
            created_at: ctx.now,
          });
        }
        break;
      case 'failed':
        event('email.failed', { error: { category: outcome.category, message: outcome.response } });
        break;
      case 'suppressed':
        event('email.suppressed', {
          suppression: {
            email: outcome.entry.address,
            reason: outcome.entry.reason,
            scope: outcome.entry.scope,
            created_at: toIso(outcome.entry.created_at),
          },
        });
        break;
    }
  }
  await saveDeliveryAttempts(trx, attempts);
  await recordEvents(trx, events);
  await refreshEmailStatuses(
    trx,
    written.map((w) => w.result.email.id),
    ctx.now,
  );
  return written;
}

const responseOf = (outcome: Outcome): string =>
  outcome.kind === 'suppressed' ? `suppressed (${outcome.entry.reason})` : outcome.response;
