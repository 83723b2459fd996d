import { newPrefixedId } from '../shared/ids.js';
import type { Db } from '../store/db.js';
import { saveEvent } from '../store/events.js';
import type { EventRow } from '../store/tables.js';
import type { EventType } from './event-types.js';

export interface NewEvent {
  workspaceId: string;
  type: EventType;
  emailId?: string | null;
  /** Every field any surface renders for this type; webhooks choose their surface's fields. */
  data: Record<string, unknown>;
  at: number;
}

/**
 * Records an event. Call it with the transaction of the state change it reports, so that the
 * change and its event (and the webhook deliveries fanned out from it) commit together.
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
  return row;
}
