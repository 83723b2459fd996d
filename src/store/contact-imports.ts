import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { ContactImport } from './tables.js';

export const saveContactImport = async (db: Db, row: ContactImport): Promise<void> => {
  await db.insertInto('contact_imports').values(row).execute();
};

export const findContactImport = (db: Db, workspaceId: string, id: string): Promise<ContactImport | undefined> =>
  db.selectFrom('contact_imports').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const findContactImportByKey = (db: Db, workspaceId: string, key: string): Promise<ContactImport | undefined> =>
  db.selectFrom('contact_imports').selectAll().where('workspace_id', '=', workspaceId).where('idempotency_key', '=', key).executeTakeFirst();

export const listContactImports = (db: Db, workspaceId: string, status: string | undefined, page: ListPage): Promise<PageOf<ContactImport>> => {
  let q = db.selectFrom('contact_imports').selectAll().where('workspace_id', '=', workspaceId);
  if (status !== undefined) q = q.where('status', '=', status);
  return readPage(q, 'id', page);
};

/** Imports a restarted process has to take up again. */
export const listUnfinishedContactImports = (db: Db): Promise<ContactImport[]> =>
  db.selectFrom('contact_imports').selectAll().where('status', 'in', ['queued', 'in_progress']).orderBy('id').execute();

export const updateContactImport = async (db: Db, id: string, changes: Partial<ContactImport>): Promise<void> => {
  await db.updateTable('contact_imports').set(changes).where('id', '=', id).execute();
};
