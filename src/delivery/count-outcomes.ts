import type { Metrics } from '../observability/metrics.js';
import type { Outcome, RecipientResult } from './outcome.js';

/**
 * Counts recorded results: every attempt by outcome and destination class, and for each
 * delivery the time since the mail was accepted (or became due, when scheduled).
 * Suppressed recipients had no attempt.
 */
export function countOutcomes(
  metrics: Metrics,
  written: Array<{ result: RecipientResult; outcome: Outcome }>,
  now: number,
): void {
  for (const { result, outcome } of written) {
    if (outcome.kind === 'suppressed') continue;
    metrics.deliveryAttempt(outcome.kind, result.item.recipient, 'mxHost' in outcome ? outcome.mxHost : null);
    if (outcome.kind === 'delivered') {
      const acceptedAt = Math.max(result.email.created_at, result.email.scheduled_at ?? 0);
      metrics.delivered((now - acceptedAt) / 1000);
    }
  }
}
