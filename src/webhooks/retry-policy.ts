import type { WebhookDisabledReason, WebhookEndpoint, WebhookSurface } from '../store/webhooks.js';

/**
 * When a failed delivery is tried again, and when an endpoint is given up on. Pure: the
 * dispatcher supplies the time and the facts.
 *
 * Legacy: one attempt at once, then one after each delay of `legacySchedule`; then failed.
 * Versioned: after each delay of `schedule`, the last repeating, until the delivery is older
 * than `maxAgeMs`. A versioned endpoint that answers 410 Gone, or keeps failing for
 * `maxAgeMs`, is disabled (Standard Webhooks' advice); legacy endpoints never are.
 */
export interface RetryPolicy {
  legacySchedule: readonly number[];
  schedule: readonly number[];
  /** webhooks.disableAfterSeconds, in ms. */
  maxAgeMs: number;
}

/** When the next attempt is due after `attemptsMade` failed attempts, or null to give up. */
export function nextAttemptAt(
  policy: RetryPolicy,
  surface: WebhookSurface,
  attemptsMade: number,
  runStartedAt: number,
  now: number,
): number | null {
  const delays = surface === 'legacy' ? policy.legacySchedule : policy.schedule;
  const index = attemptsMade - 1;
  let seconds = delays[index];
  if (seconds === undefined) {
    if (surface === 'legacy' || delays.length === 0) return null;
    seconds = delays[delays.length - 1]!;
  }
  const at = now + seconds * 1000;
  if (surface === 'v1' && at - runStartedAt > policy.maxAgeMs) return null;
  return at;
}

export interface EndpointHealth {
  failingSince: number | null;
  disable: WebhookDisabledReason | null;
}

/** The endpoint's failure streak after one attempt, and whether it must be disabled. */
export function endpointHealthAfter(
  policy: RetryPolicy,
  endpoint: Pick<WebhookEndpoint, 'surface' | 'failing_since'>,
  attempt: { succeeded: boolean; statusCode: number | null },
  now: number,
): EndpointHealth {
  if (attempt.succeeded) return { failingSince: null, disable: null };
  const failingSince = endpoint.failing_since ?? now;
  if (endpoint.surface !== 'v1') return { failingSince, disable: null };
  if (attempt.statusCode === 410) return { failingSince, disable: 'gone' };
  if (now - failingSince >= policy.maxAgeMs) return { failingSince, disable: 'failing' };
  return { failingSince, disable: null };
}
