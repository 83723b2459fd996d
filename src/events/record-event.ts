import { newPrefixedId } from '../shared/ids.js';
import type { Db } from '../store/db.js';
import { saveEvent } from '../store/events.js';
import type { EventRow, WebhookDelivery } from '../store/tables.js';
import { listEnabledWebhookEndpoints, saveWebhookDeliveries } from '../store/webhooks.js';
import { isWorkflowTriggerEvent, type EventType } from './event-types.js';
import { queueWorkflowTrigger } from './queue-workflow-trigger.js';
import { subscribesTo } from './subscriptions.js';

export interface NewEvent {
  workspaceId: string;
  type: EventType;
  emailId?: string | null;
  /** Every field any surface renders for this type; webhooks choose their surface's fields. */
  data: Record<string, unknown>;
  at: number;
}

/**
 * Records an event and its webhook outbox: one delivery row per enabled endpoint of the
 * workspace subscribed to the type, due at once. Call it with the transaction of the state
 * change it reports, so that the change, its event and its deliveries commit together (or
 * not at all): an event is never lost between the database and the dispatcher.
 */
export async function recordEvent(trx: Db, event: NewEvent): Promise<EventRow> {
  const row: EventRow = {
    id: newPrefixedId('evt_', 16),
    workspace_id: event.workspaceId,
    type: event.type,
    email_id: event.emailId ?? null,
    data: JSON.stringify(event.data),
    created_at: event.at,
  };
  await saveEvent(trx, row);
  const endpoints = await listEnabledWebhookEndpoints(trx, event.workspaceId);
  const deliveries: WebhookDelivery[] = endpoints
    .filter((e) => subscribesTo(JSON.parse(e.events) as string[], event.type))
    .map((e) => ({
      id: newPrefixedId('msg_', 16),
      endpoint_id: e.id,
      workspace_id: event.workspaceId,
      event_id: row.id,
      event_type: event.type,
      status: 'pending',
      attempt_count: 0,
      run_attempts: 0,
      next_attempt_at: event.at,
      run_started_at: event.at,
      lease_owner: null,
      lease_until: null,
      last_attempt_at: null,
      last_status_code: null,
      last_duration_ms: null,
      last_error: null,
      last_response: null,
      created_at: event.at,
      updated_at: event.at,
      completed_at: null,
    }));
  await saveWebhookDeliveries(trx, deliveries);
  if (isWorkflowTriggerEvent(event.type)) await queueWorkflowTrigger(trx, row, event.data);
  return row;
}
