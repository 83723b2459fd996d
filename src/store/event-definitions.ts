import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { EventDefinition } from './tables.js';

export const saveEventDefinition = async (db: Db, row: EventDefinition): Promise<void> => {
  await db.insertInto('event_definitions').values(row).execute();
};

export const findEventDefinition = (db: Db, workspaceId: string, id: string): Promise<EventDefinition | undefined> =>
  db.selectFrom('event_definitions').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const findEventDefinitionByName = (db: Db, workspaceId: string, name: string): Promise<EventDefinition | undefined> =>
  db.selectFrom('event_definitions').selectAll().where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst();

/** A page of a workspace's event definitions, newest first. */
export const listEventDefinitions = (db: Db, workspaceId: string, page: ListPage): Promise<PageOf<EventDefinition>> =>
  readPage(db.selectFrom('event_definitions').selectAll().where('workspace_id', '=', workspaceId), 'id', page);

export const updateEventDefinitionSchema = async (db: Db, id: string, schema: string | null, at: number): Promise<void> => {
  await db.updateTable('event_definitions').set({ schema, updated_at: at }).where('id', '=', id).execute();
};

export const removeEventDefinition = async (db: Db, id: string): Promise<void> => {
  await db.deleteFrom('event_definitions').where('id', '=', id).execute();
};
