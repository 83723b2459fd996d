import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { flag, jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { CredentialsTable } from './tables/credentials.js';

export type { CredentialKind } from './tables/credentials.js';

const credentialRows = rowCodec<Selectable<CredentialsTable>>()({ master: flag, scopes: jsonOrNull<string[]>() });

/** An API key or OAuth token; `scopes` null: every scope (API keys). */
export type Credential = EntityOf<typeof credentialRows>;

export const saveCredential = async (db: Db, credential: Credential): Promise<void> => {
  await db.insertInto('credentials').values(credentialRows.encode(credential)).execute();
};

export const findCredentialByHash = async (db: Db, secretHash: string): Promise<Credential | undefined> => {
  const row = await db.selectFrom('credentials').selectAll().where('secret_hash', '=', secretHash).executeTakeFirst();
  return row && credentialRows.decode(row);
};

export const findCredential = async (db: Db, id: string): Promise<Credential | undefined> => {
  const row = await db.selectFrom('credentials').selectAll().where('id', '=', id).executeTakeFirst();
  return row && credentialRows.decode(row);
};

interface CredentialFilter {
  workspaceId?: string | undefined;
  oauth?: boolean;
  limit?: number;
  offset?: number;
}

const filtered = (db: Db, filter: CredentialFilter) => {
  let q = db.selectFrom('credentials');
  if (filter.workspaceId !== undefined) q = q.where('workspace_id', '=', filter.workspaceId);
  if (filter.oauth !== undefined) q = q.where('kind', filter.oauth ? '=' : '<>', 'oauth');
  return q;
};

export const listCredentials = async (db: Db, filter: CredentialFilter = {}): Promise<Credential[]> => {
  let q = filtered(db, filter).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc');
  if (filter.limit !== undefined) q = q.limit(filter.limit).offset(filter.offset ?? 0);
  return credentialRows.decodeAll(await q.execute());
};

/** A page of a workspace's keys, newest first (ids are UUIDv7). */
export const listCredentialPage = async (
  db: Db,
  filter: CredentialFilter,
  page: ListPage,
): Promise<PageOf<Credential>> =>
  credentialRows.decodePage(await readPage(filtered(db, filter).selectAll(), 'id', page));

export const countCredentials = async (db: Db, filter: CredentialFilter = {}): Promise<number> => {
  const row = await filtered(db, filter)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
};

export const revokeCredential = async (db: Db, id: string, at: number): Promise<boolean> => {
  const result = await db
    .updateTable('credentials')
    .set({ revoked_at: at })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
};

export const renameCredential = async (db: Db, id: string, name: string): Promise<void> => {
  await db.updateTable('credentials').set({ name }).where('id', '=', id).execute();
};

export const touchCredential = async (db: Db, id: string, at: number): Promise<void> => {
  await db.updateTable('credentials').set({ last_used_at: at }).where('id', '=', id).execute();
};
