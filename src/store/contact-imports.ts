import type { Selectable } from 'kysely';
import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import { json, rowCodec, type EntityOf } from './row-codec.js';
import type { ContactImportsTable } from './tables/subscribers.js';

/** A row of an import that was not taken, and why. */
export interface RowError {
  /** Data row, from 1 (the header is not counted). */
  row: number;
  /** Line of the file the row ends on (the header is line 1). */
  line: number;
  reason: string;
}

// The options are the import service's (services/contact-imports.ts), as uploaded: the store keeps the document.
const importRows = rowCodec<Selectable<ContactImportsTable>>()({ options: json<unknown>(), errors: json<RowError[]>() });
/** A CSV of contacts being imported: its progress, counts and the first rows it could not take. */
export type ContactImport = EntityOf<typeof importRows>;

export const saveContactImport = async (db: Db, contactImport: ContactImport): Promise<void> => {
  await db.insertInto('contact_imports').values(importRows.encode(contactImport)).execute();
};

export const findContactImport = async (db: Db, workspaceId: string, id: string): Promise<ContactImport | undefined> => {
  const row = await db.selectFrom('contact_imports').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return row && importRows.decode(row);
};

export const findContactImportByKey = async (db: Db, workspaceId: string, key: string): Promise<ContactImport | undefined> => {
  const row = await db.selectFrom('contact_imports').selectAll().where('workspace_id', '=', workspaceId).where('idempotency_key', '=', key).executeTakeFirst();
  return row && importRows.decode(row);
};

export const listContactImports = async (db: Db, workspaceId: string, status: string | undefined, page: ListPage): Promise<PageOf<ContactImport>> => {
  let q = db.selectFrom('contact_imports').selectAll().where('workspace_id', '=', workspaceId);
  if (status !== undefined) q = q.where('status', '=', status);
  return importRows.decodePage(await readPage(q, 'id', page));
};

/** Imports a restarted process has to take up again. */
export const listUnfinishedContactImports = async (db: Db): Promise<ContactImport[]> =>
  importRows.decodeAll(await db.selectFrom('contact_imports').selectAll().where('status', 'in', ['queued', 'in_progress']).orderBy('id').execute());

export const updateContactImport = async (db: Db, id: string, changes: Partial<ContactImport>): Promise<void> => {
  await db.updateTable('contact_imports').set(importRows.encode(changes)).where('id', '=', id).execute();
};
