/** Webhook endpoints, the outbox of deliveries, and their attempts. */

/** Which API surface registered an endpoint: it decides signing, payload fields and retries. */
export type WebhookSurface = 'legacy' | 'v1';
export type WebhookEndpointStatus = 'enabled' | 'disabled';
/** manual: PATCH status; gone: the endpoint answered 410; failing: it failed for webhooks.disableAfterSeconds. */
export const WEBHOOK_DISABLED_REASONS = ['manual', 'gone', 'failing'] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];

export interface WebhookEndpointsTable {
  id: string;
  workspace_id: string;
  surface: WebhookSurface;
  url: string;
  /** JSON array of event types; `["*"]` is every type. */
  events: string;
  description: string | null;
  /** The signing secret, encrypted with the instance key (it must stay usable for HMAC). */
  secret_sealed: string;
  /** Last characters of the secret, to tell secrets apart in a masked listing. */
  secret_hint: string;
  /** After a rotation, the secret it replaced, also valid until previous_secret_expires_at. */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: number | null;
  status: WebhookEndpointStatus;
  disabled_reason: WebhookDisabledReason | null;
  disabled_at: number | null;
  /** Start of the current run of failed attempts; null after any success. */
  failing_since: number | null;
  last_success_at: number | null;
  last_failure_at: number | null;
  created_at: number;
  updated_at: number;
}

/** pending: due at next_attempt_at (in flight while leased); then succeeded or failed. */
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** The outbox: one row per event × endpoint, written in the event's transaction. */
export interface WebhookDeliveriesTable {
  /** `msg_…`: the webhook-id header, the same on every attempt so receivers can deduplicate. */
  id: string;
  endpoint_id: string;
  workspace_id: string;
  event_id: string;
  event_type: string;
  status: WebhookDeliveryStatus;
  /** Every attempt made, replays included. */
  attempt_count: number;
  /** Attempts since the run started (creation or replay): the position in the retry schedule. */
  run_attempts: number;
  next_attempt_at: number;
  run_started_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  last_response: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

export type WebhookAttemptOutcome = 'succeeded' | 'failed';

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  workspace_id: string;
  /** 1-based number among all attempts of the delivery. */
  attempt: number;
  started_at: number;
  duration_ms: number;
  outcome: WebhookAttemptOutcome;
  /** HTTP status; null when no response came (timeout, refused connection, blocked address). */
  status_code: number | null;
  error: string | null;
  /** The first bytes of the response body. */
  response: string | null;
  /** When the next attempt is due, if this one scheduled a retry. */
  next_attempt_at: number | null;
}
