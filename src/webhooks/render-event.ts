import { toIso } from '../shared/clock.js';
import type { WebhookSurface } from '../store/webhooks.js';

/**
 * The webhook envelope `{id, type, created_at, data}` and each surface's `data` for each
 * event type, picked from the event's stored data (which holds every field any surface
 * needs). Fields an event did not record are rendered as null, so a payload's keys depend
 * only on its surface and type. The event catalog in docs/api.md documents the same fields.
 */

export interface EventToRender {
  id: string;
  type: string;
  created_at: number;
  data: Record<string, unknown>;
}

export interface Envelope {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** Type-specific fields carried on both surfaces, after the common email fields. */
const EMAIL_EXTRAS: Record<string, readonly string[]> = {
  'email.sent': [],
  'email.delivered': [],
  'email.delivery_delayed': ['smtp', 'mx_host', 'attempt', 'next_attempt_at'],
  'email.bounced': ['bounce', 'smtp', 'mx_host'],
  'email.failed': ['error'],
  'email.complained': ['feedback_type'],
  'email.opened': ['user_agent', 'first', 'classification', 'is_machine'],
  'email.clicked': ['url', 'user_agent', 'first', 'classification', 'is_machine'],
  'email.suppressed': ['suppression'],
  'email.held': ['held'],
};

/** Every workflow event carries the run as it was then (error: why a failed run stopped). */
const WORKFLOW_FIELDS = [
  'workflow_id',
  'workflow_name',
  'run_id',
  'subscriber_id',
  'email',
  'trigger_event',
  'status',
  'started_at',
  'completed_at',
  'error',
  'test',
];

/** Non-email types: the same fields on both surfaces. */
const OTHER_FIELDS: Record<string, readonly string[]> = {
  'subscriber.created': ['subscriber_id', 'email', 'status', 'first_name', 'last_name', 'tags', 'metadata'],
  // `topics`: the contact's topics after a change in the preference centre (null otherwise).
  'subscriber.updated': ['subscriber_id', 'email', 'status', 'first_name', 'last_name', 'tags', 'metadata', 'topics'],
  'subscriber.unsubscribed': ['subscriber_id', 'email', 'status', 'first_name', 'last_name', 'tags', 'metadata'],
  'campaign.sent': ['campaign_id', 'name', 'recipients'],
  ...Object.fromEntries(
    ['workflow.started', 'workflow.completed', 'workflow.failed'].map((type) => [type, WORKFLOW_FIELDS]),
  ),
  'domain.updated': ['id', 'name', 'status', 'created_at', 'checks', 'changes', 'reputation'],
  // Resend's fields first (email_id … attachments), then the parsed message and what we know of it.
  'email.received': [
    'email_id',
    'created_at',
    'from',
    'to',
    'cc',
    'bcc',
    'reply_to',
    'received_for',
    'subject',
    'message_id',
    'attachments',
    'date',
    'in_reply_to',
    'references',
    'text',
    'html',
    'headers',
    'raw',
    'size',
    'envelope',
    'authentication',
    'route_ids',
    'in_reply_to_email_id',
    'in_reply_to_email',
  ],
};

const pick = (data: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> =>
  Object.fromEntries(fields.map((f) => [f, data[f] ?? null]));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Recipients as a list, whichever way the producer stored them. */
const recipients = (data: Record<string, unknown>): string[] => {
  const to = data.to ?? data.recipient;
  if (Array.isArray(to)) return to.filter((t): t is string => typeof t === 'string');
  return typeof to === 'string' ? [to] : [];
};

function legacyEmailData(event: EventToRender): Record<string, unknown> {
  const d = event.data;
  const custom = isObject(d.metadata) ? d.metadata : {};
  return {
    email_id: d.email_id ?? null,
    message_id: d.message_id ?? null,
    recipient: typeof d.recipient === 'string' ? d.recipient : (recipients(d)[0] ?? null),
    campaign_id: d.campaign_id ?? null,
    timestamp: d.timestamp ?? toIso(event.created_at),
    // The caller's own metadata, with the two fields the legacy format defines on top.
    metadata: { ...custom, subscriber_id: d.subscriber_id ?? null, tags: d.tags ?? [] },
  };
}

/** Tags (`name:value` or a bare name) as the name-to-value record Resend's payloads carry. */
const tagRecord = (tags: unknown): Record<string, string> =>
  Object.fromEntries(
    (Array.isArray(tags) ? tags : [])
      .filter((t): t is string => typeof t === 'string')
      .map((t) => (t.includes(':') ? [t.slice(0, t.indexOf(':')), t.slice(t.indexOf(':') + 1)] : [t, ''])),
  );

/**
 * SPEC: `email_id`, `to`, `subject`; then Resend's fields, so that handlers written for its
 * payloads find what they read (`created_at`, `from`, `message_id`, `broadcast_id`, `tags`);
 * then ours: the A/B test `variant` the message carried.
 */
const v1EmailData = (event: EventToRender): Record<string, unknown> => ({
  email_id: event.data.email_id ?? null,
  to: recipients(event.data),
  subject: event.data.subject ?? null,
  created_at: toIso(event.created_at),
  from: event.data.from ?? null,
  message_id: event.data.message_id ?? null,
  broadcast_id: event.data.campaign_id ?? null,
  tags: tagRecord(event.data.tags),
  variant: event.data.variant ?? null,
});

export function renderData(surface: WebhookSurface, event: EventToRender): Record<string, unknown> {
  const extras = EMAIL_EXTRAS[event.type];
  if (extras) {
    const base = surface === 'legacy' ? legacyEmailData(event) : v1EmailData(event);
    return { ...base, ...pick(event.data, extras) };
  }
  const fields = OTHER_FIELDS[event.type];
  // A type this version does not know (recorded by a newer node): pass its data through.
  return fields ? pick(event.data, fields) : { ...event.data };
}

export const renderEnvelope = (surface: WebhookSurface, event: EventToRender): Envelope => ({
  id: event.id,
  type: event.type,
  created_at: toIso(event.created_at),
  data: renderData(surface, event),
});
