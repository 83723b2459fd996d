import { randomBytes } from 'node:crypto';
import { EVENT_TYPES } from '../events/event-types.js';
import { ALL_EVENTS, isEventType, subscribesTo } from '../events/subscriptions.js';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { encryptSecret } from '../shared/crypto.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { isUuid, newId, newPrefixedId } from '../shared/ids.js';
import { checkUrl, NetworkPolicyError } from '../shared/network-policy.js';
import { countWebhookAttempts, countWebhookDeliveries, countWebhookEndpoints, failPendingWebhookDeliveries, findWebhookDelivery, findWebhookDeliveryOfEvent, findWebhookEndpoint, findWebhookEndpointByUrl, listWebhookAttempts, listWebhookDeliveriesOfEmail, listWebhookAttemptsOfDelivery, listWebhookDeliveries, listWebhookEndpoints, removeWebhookEndpoint, requeueWebhookDelivery, saveWebhookDeliveries, saveWebhookEndpoint, updateWebhookEndpoint, type WebhookAttempt, type WebhookDelivery, type WebhookDeliveryStatus, type WebhookEndpoint, type WebhookEndpointStatus, type WebhookSurface } from '../store/webhooks.js';
import type { ListPage, Listed } from '../store/list-page.js';
import type { ServiceDeps } from './deps.js';
import { listEventsByIds, saveEvents } from '../store/events.js';
import { renderEnvelope, type Envelope } from '../webhooks/render-event.js';

export const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: the HMAC-SHA256 key length; more than the 24 Standard Webhooks asks for. */
const SECRET_BYTES = 32;
/** After a rotation the previous secret signs alongside the new one for this long. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
const HINT_CHARS = 4;
/** Caller-supplied (legacy) secrets: the prefix, then 16 to 256 visible ASCII characters. */
const LEGACY_SECRET_RE = /^whsec_[\x21-\x7e]{16,256}$/;
const MAX_DESCRIPTION = 500;

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

export interface RegisterWebhookInput {
  url: string;
  events: string[];
  /** Legacy only: the caller's own secret. Versioned endpoints get a generated one. */
  secret?: string | undefined;
  description?: string | null | undefined;
}

export interface UpdateWebhookInput {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  status?: WebhookEndpointStatus | undefined;
}

export interface WebhookWithSecret {
  webhook: WebhookView;
  /** The full secret: returned by the calls that set it, never again. */
  secret: string;
}

export interface WebhookService {
  register(workspaceId: string, surface: WebhookSurface, input: RegisterWebhookInput): Promise<WebhookWithSecret>;
  list(workspaceId: string, page: ListPage): Promise<Listed<WebhookView>>;
  get(workspaceId: string, id: string): Promise<WebhookView>;
  update(workspaceId: string, id: string, input: UpdateWebhookInput): Promise<WebhookView>;
  remove(workspaceId: string, id: string): Promise<void>;
  rotateSecret(workspaceId: string, id: string): Promise<WebhookWithSecret>;
  listDeliveries(
    workspaceId: string,
    id: string,
    filter: { status?: WebhookDeliveryStatus | undefined },
    page: ListPage,
  ): Promise<Listed<DeliveryWithAttempts>>;
  getDelivery(workspaceId: string, id: string, deliveryId: string): Promise<DeliveryWithAttempts>;
  /** One delivery's attempts, oldest first. */
  listAttempts(workspaceId: string, id: string, deliveryId: string, page: { limit: number; offset: number }): Promise<{ items: AttemptView[]; total: number }>;
  replay(workspaceId: string, id: string, deliveryId: string): Promise<DeliveryView>;
  /** A delivery with the body it carries (null once the event is past retention). */
  deliveryPayload(workspaceId: string, id: string, deliveryId: string): Promise<{ delivery: DeliveryView; payload: Envelope | null }>;
  /** Every delivery of an email's events, to any endpoint. */
  deliveriesOfEmail(workspaceId: string, emailId: string): Promise<Array<{ id: string; endpoint_id: string; url: string; event_type: string; status: WebhookDeliveryStatus; attempt_count: number; status_code: number | null; created_at: string }>>;
  /**
   * Sends a test event of `type` (one the endpoint takes) to this endpoint only: sample data
   * (no email id, Resend's test address), recorded and retried like any delivery, seen by no
   * other endpoint and no workflow.
   */
  sendTest(workspaceId: string, id: string, type: string): Promise<DeliveryView>;
}

/** The event types an endpoint takes, `*` spelled out. */
export const subscribedTypes = (events: readonly string[]): string[] => (events.includes(ALL_EVENTS) ? [...EVENT_TYPES] : [...events]);

export const generateSecret = (): string => SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
export const maskSecret = (hint: string): string => `${SECRET_PREFIX}********${hint}`;

export const webhookView = (e: WebhookEndpoint, now: number): WebhookView => ({
  id: e.id,
  surface: e.surface,
  url: e.url,
  events: e.events,
  description: e.description,
  secret: maskSecret(e.secret_hint),
  previous_secret_expires_at: e.previous_secret_expires_at !== null && e.previous_secret_expires_at > now ? toIso(e.previous_secret_expires_at) : null,
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

/** Resend's event types with no counterpart here (yet): refused with a message that says so. */
const RESEND_ONLY_EVENTS = new Set([
  'email.scheduled',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'contact.topics.updated',
  'domain.created',
  'domain.deleted',
  'suppression.added',
  'suppression.removed',
  'topic.created',
  'topic.updated',
  'topic.deleted',
]);

/** Validates an event list: known types or `*`, at least one; duplicates dropped. */
export function parseEvents(events: unknown): string[] {
  if (!Array.isArray(events) || events.length === 0) {
    throw validationError('events', `must name at least one event type, or "*" for all; known: ${EVENT_TYPES.join(', ')}`);
  }
  events.forEach((e, i) => {
    if (typeof e === 'string' && (e === ALL_EVENTS || isEventType(e))) return;
    if (typeof e === 'string' && RESEND_ONLY_EVENTS.has(e)) {
      throw validationError(`events[${i}]`, `${e} is a Resend event type that mailsvc does not emit; known: ${EVENT_TYPES.join(', ')}, or "*"`);
    }
    throw validationError(`events[${i}]`, `unknown event type ${JSON.stringify(e)}; known: ${EVENT_TYPES.join(', ')}, or "*"`);
  });
  const unique = [...new Set(events as string[])];
  return unique.includes(ALL_EVENTS) ? [ALL_EVENTS] : unique;
}

export function createWebhookService(deps: ServiceDeps): WebhookService {
  const { db, clock, config, resolver, secretKey } = deps;
  const policy = { allowPrivateNetworks: config.webhooks.allowPrivateNetworks, resolver };

  const checkedUrl = async (url: string): Promise<string> => {
    try {
      return (await checkUrl(url.trim(), policy)).href;
    } catch (err) {
      if (err instanceof NetworkPolicyError) {
        // The usual first try is an endpoint on the same machine; say which setting allows it.
        const hint = !policy.allowPrivateNetworks && /https:\/\/|private/.test(err.message) ? ' (for an endpoint on this machine or a private network, when testing, set webhooks.allowPrivateNetworks: MAILSVC_WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true)' : '';
        throw validationError('url', `${err.message}${hint}`);
      }
      throw err;
    }
  };

  const description = (value: string | null | undefined): string | null => {
    if (value === undefined || value === null) return null;
    if (value.length > MAX_DESCRIPTION) throw validationError('description', `must be at most ${MAX_DESCRIPTION} characters`);
    return value;
  };

  const requireEndpoint = async (workspaceId: string, id: string): Promise<WebhookEndpoint> => {
    const found = isUuid(id) ? await findWebhookEndpoint(db, workspaceId, id) : undefined;
    if (!found) throw notFound(`Webhook ${id}`);
    return found;
  };

  /** By delivery id (`msg_…`, the webhook-id header) or by the id of the event it carries (`evt_…`). */
  const requireDelivery = async (endpointId: string, deliveryId: string): Promise<WebhookDelivery> => {
    const found = deliveryId.startsWith('evt_') ? await findWebhookDeliveryOfEvent(db, endpointId, deliveryId) : await findWebhookDelivery(db, endpointId, deliveryId);
    if (!found) throw notFound(`Delivery ${deliveryId}`);
    return found;
  };

  const refuseDuplicate = async (workspaceId: string, url: string, self?: string): Promise<void> => {
    const existing = await findWebhookEndpointByUrl(db, workspaceId, url);
    if (existing && existing.id !== self) throw new AppError('already_exists', `A webhook for ${url} exists already (${existing.id})`);
  };

  return {
    async register(workspaceId, surface, input) {
      const events = parseEvents(input.events);
      let secret: string;
      if (surface === 'legacy') {
        if (typeof input.secret !== 'string' || !LEGACY_SECRET_RE.test(input.secret)) {
          throw validationError('secret', 'must start with whsec_ followed by 16 to 256 visible ASCII characters');
        }
        secret = input.secret;
      } else {
        secret = generateSecret();
      }
      const url = await checkedUrl(input.url);
      await refuseDuplicate(workspaceId, url);
      const now = clock.now();
      const row: WebhookEndpoint = {
        id: newId(),
        workspace_id: workspaceId,
        surface,
        url,
        events,
        description: description(input.description),
        secret_sealed: encryptSecret(secretKey, secret),
        secret_hint: secret.slice(-HINT_CHARS),
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        status: 'enabled',
        disabled_reason: null,
        disabled_at: null,
        failing_since: null,
        last_success_at: null,
        last_failure_at: null,
        created_at: now,
        updated_at: now,
      };
      await saveWebhookEndpoint(db, row);
      return { webhook: webhookView(row, now), secret };
    },

    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([listWebhookEndpoints(db, workspaceId, page), countWebhookEndpoints(db, workspaceId)]);
      const now = clock.now();
      return { items: rows.map((r) => webhookView(r, now)), total, more };
    },

    get: async (workspaceId, id) => webhookView(await requireEndpoint(workspaceId, id), clock.now()),

    async update(workspaceId, id, input) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const now = clock.now();
      const changes: Partial<WebhookEndpoint> = { updated_at: now };
      if (input.url !== undefined) {
        changes.url = await checkedUrl(input.url);
        await refuseDuplicate(workspaceId, changes.url, endpoint.id);
      }
      if (input.events !== undefined) changes.events = parseEvents(input.events);
      if (input.description !== undefined) changes.description = description(input.description);
      const disabling = input.status === 'disabled' && endpoint.status !== 'disabled';
      if (disabling) Object.assign(changes, { status: 'disabled', disabled_reason: 'manual', disabled_at: now });
      if (input.status === 'enabled' && endpoint.status !== 'enabled') {
        // A fresh start: the failure streak that may have disabled it is forgotten.
        Object.assign(changes, { status: 'enabled', disabled_reason: null, disabled_at: null, failing_since: null });
      }
      await db.transaction().execute(async (trx) => {
        await updateWebhookEndpoint(trx, endpoint.id, changes);
        if (disabling) await failPendingWebhookDeliveries(trx, endpoint.id, now, 'endpoint disabled');
      });
      return webhookView((await findWebhookEndpoint(db, workspaceId, endpoint.id))!, now);
    },

    async remove(workspaceId, id) {
      const endpoint = await requireEndpoint(workspaceId, id);
      await removeWebhookEndpoint(db, workspaceId, endpoint.id);
    },

    async rotateSecret(workspaceId, id) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const now = clock.now();
      const secret = generateSecret();
      await updateWebhookEndpoint(db, endpoint.id, {
        secret_sealed: encryptSecret(secretKey, secret),
        secret_hint: secret.slice(-HINT_CHARS),
        // The secret being replaced stays valid for a day; one rotated out earlier is dropped.
        previous_secret_sealed: endpoint.secret_sealed,
        previous_secret_expires_at: now + ROTATION_OVERLAP_MS,
        updated_at: now,
      });
      return { webhook: webhookView((await findWebhookEndpoint(db, workspaceId, endpoint.id))!, now), secret };
    },

    async listDeliveries(workspaceId, id, filter, page) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const query = { endpointId: endpoint.id, status: filter.status };
      const [{ rows, more }, total] = await Promise.all([listWebhookDeliveries(db, query, page), countWebhookDeliveries(db, query)]);
      // Every attempt of the page's deliveries, in one query: a failure answered before a
      // successful retry stays visible in the list.
      const attempts = new Map<string, AttemptView[]>(rows.map((r) => [r.id, []]));
      for (const a of await listWebhookAttempts(db, rows.map((r) => r.id))) attempts.get(a.delivery_id)?.push(attemptView(a));
      return { items: rows.map((d) => ({ ...deliveryView(d), attempts: attempts.get(d.id)! })), total, more };
    },

    async getDelivery(workspaceId, id, deliveryId) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      const attempts = await listWebhookAttempts(db, [delivery.id]);
      return { ...deliveryView(delivery), attempts: attempts.map(attemptView) };
    },

    async deliveryPayload(workspaceId, id, deliveryId) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      const [event] = await listEventsByIds(db, [delivery.event_id]);
      const payload = event ? renderEnvelope(endpoint.surface, event) : null;
      return { delivery: deliveryView(delivery), payload };
    },

    async listAttempts(workspaceId, id, deliveryId, page) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      const [rows, total] = await Promise.all([listWebhookAttemptsOfDelivery(db, delivery.id, page), countWebhookAttempts(db, delivery.id)]);
      return { items: rows.map(attemptView), total };
    },

    async deliveriesOfEmail(workspaceId, emailId) {
      const rows = await listWebhookDeliveriesOfEmail(db, workspaceId, emailId);
      return rows.map((r) => ({ id: r.id, endpoint_id: r.endpoint_id, url: r.url, event_type: r.event_type, status: r.status, attempt_count: r.attempt_count, status_code: r.last_status_code, created_at: toIso(r.created_at) }));
    },

    async sendTest(workspaceId, id, type) {
      const endpoint = await requireEndpoint(workspaceId, id);
      if (endpoint.status !== 'enabled') throw new AppError('invalid_state', 'The webhook is disabled; enable it before sending a test event');
      if (!isEventType(type) || !subscribesTo(endpoint.events, type)) {
        throw validationError('type', `must be an event type this endpoint takes: ${endpoint.events.join(', ')}`);
      }
      const now = clock.now();
      const event = { id: newPrefixedId('evt_', 16), workspace_id: workspaceId, type, email_id: null, data: sampleEventData(type, now), created_at: now };
      const delivery: WebhookDelivery = {
        id: newPrefixedId('msg_', 16), endpoint_id: endpoint.id, workspace_id: workspaceId, event_id: event.id, event_type: type, status: 'pending',
        attempt_count: 0, run_attempts: 0, next_attempt_at: now, run_started_at: now, lease_owner: null, lease_until: null, last_attempt_at: null,
        last_status_code: null, last_duration_ms: null, last_error: null, last_response: null, created_at: now, updated_at: now, completed_at: null,
      };
      // Not through recordEvent: that would hand the sample to every endpoint and to workflows.
      await db.transaction().execute(async (trx) => {
        await saveEvents(trx, [event]);
        await saveWebhookDeliveries(trx, [delivery]);
      });
      return deliveryView(delivery);
    },

    async replay(workspaceId, id, deliveryId) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      if (endpoint.status !== 'enabled') {
        throw new AppError('invalid_state', 'The webhook is disabled; enable it (PATCH status "enabled") before replaying');
      }
      const now = clock.now();
      if (!(await requeueWebhookDelivery(db, delivery.id, now))) {
        throw new AppError('invalid_state', 'This delivery is being attempted right now; try again when the attempt has finished');
      }
      return deliveryView((await findWebhookDelivery(db, endpoint.id, delivery.id))!);
    },
  };
}

/**
 * Data for a test event: every field the type's payloads carry, with sample values a receiver
 * can recognise (`test: true`, addresses at Resend's test domain, a null email id).
 */
function sampleEventData(type: string, now: number): Record<string, unknown> {
  const at = toIso(now);
  return {
    test: true,
    email_id: null,
    message_id: '<test@mailsvc.invalid>',
    from: 'mailsvc <test@mailsvc.invalid>',
    to: ['delivered@resend.dev'],
    recipient: 'delivered@resend.dev',
    subject: 'Test event from the mailsvc dashboard',
    tags: [],
    metadata: { test: true },
    timestamp: at,
    subscriber_id: null,
    email: 'delivered@resend.dev',
    status: type.startsWith('workflow.') ? type.slice('workflow.'.length) : 'subscribed',
    name: 'Test',
    id: null,
    created_at: at,
  };
}
