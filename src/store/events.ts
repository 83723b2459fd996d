import type { Db } from './db.js';
import type { EventRow } from './tables.js';

/** Events, 200 rows per statement. */
export const saveEvents = async (db: Db, rows: readonly EventRow[]): Promise<void> => {
  for (let i = 0; i < rows.length; i += 200) await db.insertInto('events').values(rows.slice(i, i + 200)).execute();
};

export const listEmailEvents = (db: Db, workspaceId: string, emailId: string): Promise<EventRow[]> =>
  db.selectFrom('events').selectAll().where('workspace_id', '=', workspaceId).where('email_id', '=', emailId).orderBy('created_at').orderBy('id').execute();

export const listEventsByIds = (db: Db, ids: string[]): Promise<EventRow[]> =>
  ids.length === 0 ? Promise.resolve([]) : db.selectFrom('events').selectAll().where('id', 'in', ids).execute();

/** Whether the email has an event of this type already (first open, first click). */
export async function hasEmailEvent(db: Db, emailId: string, type: string): Promise<boolean> {
  const row = await db.selectFrom('events').select('id').where('email_id', '=', emailId).where('type', '=', type).limit(1).executeTakeFirst();
  return row !== undefined;
}
