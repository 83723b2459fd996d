import { newId } from '../shared/ids.js';
import type { Db } from '../store/infra/db.js';
import { findSubscriber, findSubscriberByEmail } from '../store/subscribers.js';
import type { NewEventRecord } from '../store/events.js';
import { saveWorkflowTrigger, triggerContactKey } from '../store/workflow-triggers.js';

/**
 * Puts a platform event about a subscriber into the workflow trigger outbox, in the
 * transaction that records it, once the caller found that an enabled workflow starts on it or a
 * run waits for it (`hasWorkflowListener`, two indexed look-ups per workspace and type): the
 * state change and the trigger commit together, so no trigger is lost to a crash.
 */
export async function queueWorkflowTrigger(trx: Db, event: NewEventRecord): Promise<void> {
  const { data } = event;
  // subscriber.* name the subscriber; email.* name it when the mail was a campaign's, else the recipient.
  const byId =
    typeof data.subscriber_id === 'string'
      ? await findSubscriber(trx, event.workspace_id, data.subscriber_id)
      : undefined;
  const address =
    typeof data.email === 'string' ? data.email : typeof data.recipient === 'string' ? data.recipient : undefined;
  const subscriber = byId ?? (address ? await findSubscriberByEmail(trx, event.workspace_id, address) : undefined);
  if (!subscriber) return;
  await saveWorkflowTrigger(trx, {
    id: newId(),
    workspace_id: event.workspace_id,
    event_name: event.type,
    event_id: event.id,
    subscriber_id: subscriber.id,
    email: subscriber.email,
    contact_key: triggerContactKey(event.workspace_id, subscriber.email),
    payload: data,
    test: data.test === true,
    created_at: event.created_at,
    lease_owner: null,
    lease_until: null,
  });
}
