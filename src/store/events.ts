import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { EventsTable } from './tables/events.js';

export const eventRows = rowCodec<Selectable<EventsTable>>()({ data: json<Record<string, unknown>>() });
/** An event: `data` holds every field any surface renders; webhooks pick their surface's. */
export type EventRecord = EntityOf<typeof eventRows>;
/** An event as written: the database assigns `seq`. */
export type NewEventRecord = Omit<EventRecord, 'seq'>;

/** Events, 200 rows per statement. */
export const saveEvents = async (db: Db, events: readonly NewEventRecord[]): Promise<void> => {
  for (let i = 0; i < events.length; i += 200)
    await db
      .insertInto('events')
      .values(events.slice(i, i + 200).map(eventRows.encode))
      .execute();
};

/** An email's events in the order they were written (not by time: events of one millisecond tie). */
export const listEmailEvents = async (db: Db, workspaceId: string, emailId: string): Promise<EventRecord[]> =>
  eventRows.decodeAll(
    await db
      .selectFrom('events')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('email_id', '=', emailId)
      .orderBy('seq')
      .execute(),
  );

export const listEventsByIds = async (db: Db, ids: string[]): Promise<EventRecord[]> =>
  ids.length === 0
    ? []
    : eventRows.decodeAll(await db.selectFrom('events').selectAll().where('id', 'in', ids).execute());

/** The events of these types of several emails, each email's in the order they were written. */
export const listEmailEventTypes = (
  db: Db,
  emailIds: readonly string[],
  types: readonly string[],
): Promise<Array<{ email_id: string | null; type: string }>> =>
  emailIds.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom('events')
        .select(['email_id', 'type'])
        .where('email_id', 'in', [...emailIds])
        .where('type', 'in', [...types])
        .orderBy('seq')
        .execute();

/** An email's events of one type (its opens or its clicks), oldest first. */
export async function listEmailEventsOfType(
  db: Db,
  emailId: string,
  type: string,
): Promise<Array<Pick<EventRecord, 'id' | 'created_at' | 'data'>>> {
  const rows = await db
    .selectFrom('events')
    .select(['id', 'created_at', 'data'])
    .where('email_id', '=', emailId)
    .where('type', '=', type)
    .orderBy('seq')
    .execute();
  return eventRows.decodeAll(rows);
}

/** Replaces an event's data: an engagement event found later to be a scanner's is corrected. */
export const updateEventData = async (db: Db, id: string, data: Record<string, unknown>): Promise<void> => {
  await db.updateTable('events').set(eventRows.encode({ data })).where('id', '=', id).execute();
};
