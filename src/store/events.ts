import type { Db } from './db.js';
import type { EventRow, NewEventRow } from './tables.js';

/** Events, 200 rows per statement. */
export const saveEvents = async (db: Db, rows: readonly NewEventRow[]): Promise<void> => {
  for (let i = 0; i < rows.length; i += 200) await db.insertInto('events').values(rows.slice(i, i + 200)).execute();
};

/** An email's events in the order they were written (not by time: events of one millisecond tie). */
export const listEmailEvents = (db: Db, workspaceId: string, emailId: string): Promise<EventRow[]> =>
  db.selectFrom('events').selectAll().where('workspace_id', '=', workspaceId).where('email_id', '=', emailId).orderBy('seq').execute();

export const listEventsByIds = (db: Db, ids: string[]): Promise<EventRow[]> =>
  ids.length === 0 ? Promise.resolve([]) : db.selectFrom('events').selectAll().where('id', 'in', ids).execute();

/** The events of these types of several emails, each email's in the order they were written. */
export const listEmailEventTypes = (db: Db, emailIds: readonly string[], types: readonly string[]): Promise<Array<{ email_id: string | null; type: string }>> =>
  emailIds.length === 0 ? Promise.resolve([]) : db.selectFrom('events').select(['email_id', 'type']).where('email_id', 'in', [...emailIds]).where('type', 'in', [...types]).orderBy('seq').execute();

/** Whether the email has an event of this type already (first open, first click). */
export async function hasEmailEvent(db: Db, emailId: string, type: string): Promise<boolean> {
  const row = await db.selectFrom('events').select('id').where('email_id', '=', emailId).where('type', '=', type).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** An email's events of one type (its opens or its clicks), oldest first, with their data decoded. */
export async function listEmailEventsOfType(db: Db, emailId: string, type: string): Promise<Array<{ id: string; created_at: number; data: Record<string, unknown> }>> {
  const rows = await db.selectFrom('events').select(['id', 'created_at', 'data']).where('email_id', '=', emailId).where('type', '=', type).orderBy('seq').execute();
  return rows.map((r) => ({ id: r.id, created_at: Number(r.created_at), data: JSON.parse(r.data) as Record<string, unknown> }));
}

/** Replaces an event's data: an engagement event found later to be a scanner's is corrected. */
export const updateEventData = async (db: Db, id: string, data: Record<string, unknown>): Promise<void> => {
  await db.updateTable('events').set({ data: JSON.stringify(data) }).where('id', '=', id).execute();
};
