import type { Selectable } from 'kysely';
import type { FieldSchema } from '../shared/typed-fields.js';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { EventDefinitionsTable } from './tables/workflows.js';
import { refuseDuplicate } from './infra/unique-violation.js';

const definitionRows = rowCodec<Selectable<EventDefinitionsTable>>()({ schema: jsonOrNull<FieldSchema>() });
/** A declared custom event: its name and the types of its payload's fields (null: any payload). */
export type EventDefinition = EntityOf<typeof definitionRows>;

/** A new definition; `already_exists` when the workspace declared the name already (the unique index decides). */
export const saveEventDefinition = (db: Db, definition: EventDefinition): Promise<void> =>
  refuseDuplicate(
    'event_definitions',
    async () => {
      await db.insertInto('event_definitions').values(definitionRows.encode(definition)).execute();
    },
    `Event ${definition.name} already exists`,
    { field: 'name' },
  );

export const findEventDefinition = async (
  db: Db,
  workspaceId: string,
  id: string,
): Promise<EventDefinition | undefined> => {
  const row = await db
    .selectFrom('event_definitions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && definitionRows.decode(row);
};

export const findEventDefinitionByName = async (
  db: Db,
  workspaceId: string,
  name: string,
): Promise<EventDefinition | undefined> => {
  const row = await db
    .selectFrom('event_definitions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', name)
    .executeTakeFirst();
  return row && definitionRows.decode(row);
};

/** A page of a workspace's event definitions, newest first. */
export const listEventDefinitions = async (
  db: Db,
  workspaceId: string,
  page: ListPage,
): Promise<PageOf<EventDefinition>> =>
  definitionRows.decodePage(
    await readPage(db.selectFrom('event_definitions').selectAll().where('workspace_id', '=', workspaceId), 'id', page),
  );

export const updateEventDefinitionSchema = async (
  db: Db,
  id: string,
  schema: FieldSchema | null,
  at: number,
): Promise<void> => {
  await db
    .updateTable('event_definitions')
    .set(definitionRows.encode({ schema, updated_at: at }))
    .where('id', '=', id)
    .execute();
};

export const removeEventDefinition = async (db: Db, id: string): Promise<void> => {
  await db.deleteFrom('event_definitions').where('id', '=', id).execute();
};
