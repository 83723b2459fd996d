import type { Generated } from 'kysely';

/** Events, in the order they were written. */

export interface EventsTable {
  /** The order events were written in, assigned by the database (0020-event-order). */
  seq: Generated<number>;
  /** `evt_…`. */
  id: string;
  workspace_id: string;
  type: string;
  email_id: string | null;
  /** JSON: every field any surface renders; webhooks pick their surface's fields. */
  data: string;
  created_at: number;
}
