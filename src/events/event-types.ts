import { isOneOf } from '../shared/one-of.js';

/**
 * The event catalog (SPEC Events). `email.delivery_delayed` is ours: a temporary failure that
 * will be retried; so is `email.failed`: mailsvc could not attempt the message at all (no
 * DKIM key for the sending domain, content missing); `email.received` is a message taken by
 * a receiving route; `email.held`: the reputation guard holds a marketing message of a paused
 * sending domain (queued, not lost); `domain.updated`: a domain's verification or the status of
 * one of its deliverability checks changed, or its reputation guard paused or resumed.
 * `workflow.failed` is ours too: a run stopped because a step failed for good.
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
  'email.held',
  'subscriber.created',
  'subscriber.updated',
  'subscriber.unsubscribed',
  'campaign.sent',
  'workflow.started',
  'workflow.completed',
  'workflow.failed',
  'domain.updated',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Platform events that start or resume workflow runs: those about one subscriber. */
const WORKFLOW_TRIGGER_EVENTS = [
  'subscriber.created',
  'subscriber.updated',
  'subscriber.unsubscribed',
  'email.opened',
  'email.clicked',
  'email.bounced',
] as const satisfies readonly EventType[];

export const isWorkflowTriggerEvent = (type: string): boolean => isOneOf(WORKFLOW_TRIGGER_EVENTS, type);
