/**
 * The event catalog (SPEC Events). `email.delivery_delayed` is ours: a temporary failure that
 * will be retried; so is `email.failed`: mailsvc could not attempt the message at all (no
 * DKIM key for the sending domain, content missing); `email.received` is a message taken by
 * a receiving route. `workflow.*` events are not emitted: mailsvc has no workflows.
 */
export const EVENT_TYPES = [
  'email.sent',
  'email.delivered',
  'email.delivery_delayed',
  'email.failed',
  'email.opened',
  'email.clicked',
  'email.bounced',
  'email.complained',
  'email.suppressed',
  'email.received',
  'subscriber.created',
  'subscriber.updated',
  'subscriber.unsubscribed',
  'campaign.sent',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
