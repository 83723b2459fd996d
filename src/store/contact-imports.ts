import type { Selectable } from 'kysely';
import type { Db, Dialect } from './infra/db.js';
import { claimRows, unleased, type Lease } from './lease.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { ContactImportsTable } from './tables/subscribers.js';

/** A row of an import that was not taken, and why. */
export interface RowError {
  /** Data row, from 1 (the header is not counted). */
  row: number;
  /** Line of the file the row ends on (the header is line 1). */
  line: number;
  reason: string;
}

// The options are the import service's (services/marketing/contact-imports/contact-imports.ts), as uploaded: the store keeps the document.
const importRows = rowCodec<Selectable<ContactImportsTable>>()({
  options: json<unknown>(),
  errors: json<RowError[]>(),
});
/** A CSV of contacts being imported: its progress, counts and the first rows it could not take. */
export type ContactImport = EntityOf<typeof importRows>;

export const saveContactImport = async (db: Db, contactImport: ContactImport): Promise<void> => {
  await db.insertInto('contact_imports').values(importRows.encode(contactImport)).execute();
};

export const findContactImport = async (
  db: Db,
  workspaceId: string,
  id: string,
): Promise<ContactImport | undefined> => {
  const row = await db
    .selectFrom('contact_imports')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && importRows.decode(row);
};

export const findContactImportByKey = async (
  db: Db,
  workspaceId: string,
  key: string,
): Promise<ContactImport | undefined> => {
  const row = await db
    .selectFrom('contact_imports')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
  return row && importRows.decode(row);
};

export const listContactImports = async (
  db: Db,
  workspaceId: string,
  status: string | undefined,
  page: ListPage,
): Promise<PageOf<ContactImport>> => {
  let q = db.selectFrom('contact_imports').selectAll().where('workspace_id', '=', workspaceId);
  if (status !== undefined) q = q.where('status', '=', status);
  return importRows.decodePage(await readPage(q, 'id', page));
};

/**
 * Takes one import that is waiting (queued, or in progress on a node whose lease ran out: it
 * died) and marks it in progress under the lease; oldest first.
 */
export async function claimContactImport(db: Db, dialect: Dialect, lease: Lease): Promise<ContactImport | undefined> {
  const pick = db
    .selectFrom('contact_imports')
    .select('id')
    .where('status', 'in', ['queued', 'in_progress'])
    .where(unleased(lease.now))
    .orderBy('created_at')
    .orderBy('id')
    .limit(1);
  const [row] = await claimRows(db, dialect, 'contact_imports', lease, pick, {
    set: { status: 'in_progress', updated_at: lease.now },
  });
  return row && importRows.decode(row);
}

/**
 * Records a batch's progress (counts, errors, the cursor) in the batch's transaction, and
 * extends the lease to `leaseUntil`; only while `owner` still holds the import. False: another
 * node took it (the caller rolls the batch back).
 */
export async function advanceContactImport(
  trx: Db,
  id: string,
  owner: string,
  progress: Pick<
    ContactImport,
    'total' | 'created' | 'updated' | 'skipped' | 'failed' | 'errors' | 'cursor_row' | 'updated_at'
  >,
  leaseUntil: number,
): Promise<boolean> {
  const result = await trx
    .updateTable('contact_imports')
    .set({ ...importRows.encode(progress), lease_until: leaseUntil })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where('status', '=', 'in_progress')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Ends an import (completed or failed) held by `owner`: its lease given back and its file deleted. False when another node holds it. */
export async function finishContactImport(
  db: Db,
  id: string,
  owner: string,
  changes: Partial<
    Pick<ContactImport, 'total' | 'created' | 'updated' | 'skipped' | 'failed' | 'errors' | 'cursor_row' | 'failure'>
  > &
    Pick<ContactImport, 'status' | 'completed_at' | 'updated_at'>,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('contact_imports')
      .set({ ...importRows.encode(changes), lease_owner: null, lease_until: null })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await trx.deleteFrom('contact_import_files').where('import_id', '=', id).execute();
    return true;
  });
}

// ---------------------------------------------------------------- the file

/** One chunk of an import's file; `seq` from 0. Written before the import's row: a file without one is removed by retention. */
export const saveContactImportChunk = async (
  db: Db,
  importId: string,
  seq: number,
  data: Buffer,
  now: number,
): Promise<void> => {
  await db.insertInto('contact_import_files').values({ import_id: importId, seq, data, created_at: now }).execute();
};

/** An import's file, chunk by chunk in order: one chunk in memory at a time. */
export async function* readContactImportFile(db: Db, importId: string): AsyncGenerator<Buffer> {
  for (let seq = 0; ; seq++) {
    const row = await db
      .selectFrom('contact_import_files')
      .select('data')
      .where('import_id', '=', importId)
      .where('seq', '=', seq)
      .executeTakeFirst();
    if (!row) return;
    yield row.data;
  }
}

/** Files of uploads whose import row was never written (the node stopped between the two), older than `before`. */
export async function deleteOrphanImportFiles(db: Db, before: number): Promise<number> {
  const result = await db
    .deleteFrom('contact_import_files')
    .where('created_at', '<', before)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('contact_imports')
            .select('id')
            .whereRef('contact_imports.id', '=', 'contact_import_files.import_id'),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
