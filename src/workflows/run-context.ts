import type { WorkflowRun } from '../store/workflow-runs.js';
import type { SubscriberView } from '../services/marketing/subscribers.js';
import type { ContactFields, RunContext } from './evaluate-rule.js';

/** The contact as conditions and variables read it: its record, properties being its metadata. */
export const contactFields = (s: SubscriberView): ContactFields => ({
  id: s.id,
  email: s.email,
  first_name: s.first_name,
  last_name: s.last_name,
  status: s.status,
  unsubscribed: s.status === 'unsubscribed',
  tags: s.tags,
  external_id: s.external_id,
  properties: s.metadata ?? {},
});

/** A payload that is not an object (a run saved from a malformed event) reads as empty. */
const object = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** What a run's steps read: its contact now (null once deleted), its trigger's payload, and what its waits received. */
export const runContext = (run: WorkflowRun, contact: SubscriberView | null): RunContext => ({
  contact: contact ? contactFields(contact) : null,
  event: object(run.trigger_payload),
  wait_events: object(run.wait_events),
});
