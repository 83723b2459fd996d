import { newPrefixedId } from '../shared/ids.js';
import type { Db } from '../store/infra/db.js';
import { saveEvents, type NewEventRecord } from '../store/events.js';
import { listEnabledWebhookEndpointsOf, saveWebhookDeliveries, type WebhookDelivery } from '../store/webhooks.js';
import { isWorkflowTriggerEvent, type EventType } from './event-types.js';
import { hasWorkflowListener } from '../store/workflows.js';
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
export async function recordEvent(trx: Db, event: NewEvent): Promise<NewEventRecord> {
  return (await recordEvents(trx, [event]))[0]!;
}

/**
 * `recordEvent` for many events in one transaction: the endpoints of every workspace named are
 * read once (no look-up per event, and never a stale copy), then events and deliveries are
 * written with multi-row inserts. Events that can start or resume a workflow go into the
 * workflow trigger outbox in the same transaction.
 */
export async function recordEvents(trx: Db, events: readonly NewEvent[]): Promise<NewEventRecord[]> {
  if (events.length === 0) return [];
  const rows: NewEventRecord[] = events.map((event) => ({
    id: newPrefixedId('evt_', 16),
    workspace_id: event.workspaceId,
    type: event.type,
    email_id: event.emailId ?? null,
    data: event.data,
    created_at: event.at,
  }));
  await saveEvents(trx, rows);
  // Whether anything listens depends on the workspace and the type only: asked once per pair,
  // not per event (an import's batch of 500 subscriber.created made 1,000 look-ups).
  const listened = new Map<string, boolean>();
  for (const row of rows) {
    if (!isWorkflowTriggerEvent(row.type)) continue;
    const pair = `${row.workspace_id} ${row.type}`;
    let listening = listened.get(pair);
    if (listening === undefined)
      listened.set(pair, (listening = await hasWorkflowListener(trx, row.workspace_id, row.type)));
    if (listening) await queueWorkflowTrigger(trx, row);
  }
  const endpoints = await listEnabledWebhookEndpointsOf(trx, [...new Set(events.map((e) => e.workspaceId))]);
  if (endpoints.length === 0) return rows;
  const deliveries: WebhookDelivery[] = [];
  rows.forEach((row, i) => {
    const at = events[i]!.at;
    for (const e of endpoints) {
      if (e.workspace_id !== row.workspace_id || !subscribesTo(e.events, row.type)) continue;
      deliveries.push({
        id: newPrefixedId('msg_', 16),
        endpoint_id: e.id,
        workspace_id: row.workspace_id,
        event_id: row.id,
        event_type: row.type,
        status: 'pending',
        attempt_count: 0,
        run_attempts: 0,
        next_attempt_at: at,
        run_started_at: at,
        lease_owner: null,
        lease_until: null,
        last_attempt_at: null,
        last_status_code: null,
        last_duration_ms: null,
        last_error: null,
        last_response: null,
        created_at: at,
        updated_at: at,
        completed_at: null,
      });
    }
  });
  await saveWebhookDeliveries(trx, deliveries);
  return rows;
}
