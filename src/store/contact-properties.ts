import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { ContactProperty } from './tables.js';

export const saveContactProperty = async (db: Db, row: ContactProperty): Promise<void> => {
  await db.insertInto('contact_properties').values(row).execute();
};

export const findContactProperty = (db: Db, workspaceId: string, id: string): Promise<ContactProperty | undefined> =>
  db.selectFrom('contact_properties').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const findContactPropertyByKey = (db: Db, workspaceId: string, key: string): Promise<ContactProperty | undefined> =>
  db.selectFrom('contact_properties').selectAll().where('workspace_id', '=', workspaceId).where('key', '=', key).executeTakeFirst();

/** Every property of a workspace (few: checks of contact writes and template fallbacks read them all). */
export const listAllContactProperties = (db: Db, workspaceId: string): Promise<ContactProperty[]> =>
  db.selectFrom('contact_properties').selectAll().where('workspace_id', '=', workspaceId).orderBy('key').execute();

export const listContactProperties = (db: Db, workspaceId: string, page: ListPage): Promise<PageOf<ContactProperty>> =>
  readPage(db.selectFrom('contact_properties').selectAll().where('workspace_id', '=', workspaceId), 'id', page);

export const updateContactPropertyFallback = async (db: Db, id: string, fallback: string | null): Promise<void> => {
  await db.updateTable('contact_properties').set({ fallback_value: fallback }).where('id', '=', id).execute();
};

export const removeContactProperty = async (db: Db, id: string): Promise<void> => {
  await db.deleteFrom('contact_properties').where('id', '=', id).execute();
};

export const countContactProperties = async (db: Db, workspaceId: string): Promise<number> =>
  Number((await db.selectFrom('contact_properties').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow()).n);

/** The fallback values of a workspace's properties, by key (templates use them when a contact has none). */
export async function listContactPropertyFallbacks(db: Db, workspaceId: string): Promise<Record<string, unknown>> {
  const declared = await listAllContactProperties(db, workspaceId);
  return Object.fromEntries(declared.flatMap((p) => (p.fallback_value === null ? [] : [[p.key, JSON.parse(p.fallback_value) as unknown]])));
}
