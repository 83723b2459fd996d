import { toIso, toIsoOrNull } from '../../shared/clock.js';
import type {
  WebhookAttempt,
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointStatus,
  WebhookSurface,
} from '../../store/webhooks.js';

/** How endpoints, their deliveries and attempts are shown on every surface (a secret only by its last characters). */

export const SECRET_PREFIX = 'whsec_';

export interface WebhookView {
  id: string;
  surface: WebhookSurface;
  url: string;
  events: string[];
  description: string | null;
  /** Masked (`whsec_********abcd`), except in the responses that create or rotate it. */
  secret: string;
  previous_secret_expires_at: string | null;
  status: WebhookEndpointStatus;
  disabled_reason: WebhookEndpoint['disabled_reason'];
  disabled_at: string | null;
  failing_since: string | null;
  last_success_at: string | null;
  last_failure_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AttemptView {
  id: string;
  attempt: number;
  started_at: string;
  duration_ms: number;
  outcome: WebhookAttempt['outcome'];
  status_code: number | null;
  error: string | null;
  response: string | null;
  next_attempt_at: string | null;
}

/** A delivery with every attempt made so far, oldest first. */
export type DeliveryWithAttempts = DeliveryView & { attempts: AttemptView[] };

export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  status: WebhookDeliveryStatus;
  attempt_count: number;
  last_attempt_at: string | null;
  status_code: number | null;
  duration_ms: number | null;
  response: string | null;
  error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  completed_at: string | null;
}

const maskSecret = (hint: string): string => `${SECRET_PREFIX}********${hint}`;

export const webhookView = (e: WebhookEndpoint, now: number): WebhookView => ({
  id: e.id,
  surface: e.surface,
  url: e.url,
  events: e.events,
  description: e.description,
  secret: maskSecret(e.secret_hint),
  previous_secret_expires_at:
    e.previous_secret_expires_at !== null && e.previous_secret_expires_at > now
      ? toIso(e.previous_secret_expires_at)
      : null,
  status: e.status,
  disabled_reason: e.disabled_reason,
  disabled_at: toIsoOrNull(e.disabled_at),
  failing_since: toIsoOrNull(e.failing_since),
  last_success_at: toIsoOrNull(e.last_success_at),
  last_failure_at: toIsoOrNull(e.last_failure_at),
  created_at: toIso(e.created_at),
  updated_at: toIso(e.updated_at),
});

export const deliveryView = (d: WebhookDelivery): DeliveryView => ({
  id: d.id,
  event_id: d.event_id,
  event_type: d.event_type,
  status: d.status,
  attempt_count: d.attempt_count,
  last_attempt_at: toIsoOrNull(d.last_attempt_at),
  status_code: d.last_status_code,
  duration_ms: d.last_duration_ms,
  response: d.last_response,
  error: d.last_error,
  next_attempt_at: d.status === 'pending' ? toIso(d.next_attempt_at) : null,
  created_at: toIso(d.created_at),
  completed_at: toIsoOrNull(d.completed_at),
});

export const attemptView = (a: WebhookAttempt): AttemptView => ({
  id: a.id,
  attempt: a.attempt,
  started_at: toIso(a.started_at),
  duration_ms: a.duration_ms,
  outcome: a.outcome,
  status_code: a.status_code,
  error: a.error,
  response: a.response,
  next_attempt_at: toIsoOrNull(a.next_attempt_at),
});
