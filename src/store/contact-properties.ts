import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { ContactPropertiesTable } from './tables/subscribers.js';
import { refuseDuplicate } from './infra/unique-violation.js';

const propertyRows = rowCodec<Selectable<ContactPropertiesTable>>()({
  fallback_value: jsonOrNull<string | number | boolean>(),
});
/** A declared contact property: its key, its type and the value templates use when a contact has none (null: none). */
export type ContactProperty = EntityOf<typeof propertyRows>;

/** A new property; `already_exists` when the workspace declared its key already (the unique index decides). */
export const saveContactProperty = (db: Db, property: ContactProperty): Promise<void> =>
  refuseDuplicate(
    'contact_properties',
    async () => {
      await db.insertInto('contact_properties').values(propertyRows.encode(property)).execute();
    },
    `Contact property ${property.key} already exists`,
    { field: 'key' },
  );

export const findContactProperty = async (
  db: Db,
  workspaceId: string,
  id: string,
): Promise<ContactProperty | undefined> => {
  const row = await db
    .selectFrom('contact_properties')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && propertyRows.decode(row);
};

export const findContactPropertyByKey = async (
  db: Db,
  workspaceId: string,
  key: string,
): Promise<ContactProperty | undefined> => {
  const row = await db
    .selectFrom('contact_properties')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && propertyRows.decode(row);
};

/** Every property of a workspace (few: checks of contact writes and template fallbacks read them all). */
export const listAllContactProperties = async (db: Db, workspaceId: string): Promise<ContactProperty[]> =>
  propertyRows.decodeAll(
    await db
      .selectFrom('contact_properties')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('key')
      .execute(),
  );

export const listContactProperties = async (
  db: Db,
  workspaceId: string,
  page: ListPage,
): Promise<PageOf<ContactProperty>> =>
  propertyRows.decodePage(
    await readPage(db.selectFrom('contact_properties').selectAll().where('workspace_id', '=', workspaceId), 'id', page),
  );

export const updateContactPropertyFallback = async (
  db: Db,
  id: string,
  fallback: ContactProperty['fallback_value'],
): Promise<void> => {
  await db
    .updateTable('contact_properties')
    .set(propertyRows.encode({ fallback_value: fallback }))
    .where('id', '=', id)
    .execute();
};

export const removeContactProperty = async (db: Db, id: string): Promise<void> => {
  await db.deleteFrom('contact_properties').where('id', '=', id).execute();
};

export const countContactProperties = async (db: Db, workspaceId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('contact_properties')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

/** The fallback values of a workspace's properties, by key (templates use them when a contact has none). */
export async function listContactPropertyFallbacks(db: Db, workspaceId: string): Promise<Record<string, unknown>> {
  const declared = await listAllContactProperties(db, workspaceId);
  return Object.fromEntries(declared.flatMap((p) => (p.fallback_value === null ? [] : [[p.key, p.fallback_value]])));
}
