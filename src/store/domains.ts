import { normalizeDomain } from '../shared/domain-name.js';
import { isUuid } from '../shared/ids.js';
import type { Db } from './db.js';
import type { DkimKey, Domain, DomainUpdate } from './tables.js';

export const saveDomain = async (db: Db, domain: Domain, keys: DkimKey[]): Promise<void> => {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('domains').values(domain).execute();
    await trx.insertInto('dkim_keys').values(keys).execute();
  });
};

export const findDomain = (db: Db, workspaceId: string, id: string): Promise<Domain | undefined> =>
  db.selectFrom('domains').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const findDomainByName = (db: Db, workspaceId: string, name: string): Promise<Domain | undefined> =>
  db.selectFrom('domains').selectAll().where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst();

/** A workspace's domain by id or by name (any case); ids are only looked up when they are uuids. */
export async function findDomainByIdOrName(db: Db, workspaceId: string, idOrName: string): Promise<Domain | undefined> {
  const byId = isUuid(idOrName) ? await findDomain(db, workspaceId, idOrName.toLowerCase()) : undefined;
  if (byId) return byId;
  const name = normalizeDomain(idOrName);
  return name ? findDomainByName(db, workspaceId, name) : undefined;
}

export const listDomains = (db: Db, workspaceId: string): Promise<Domain[]> =>
  db.selectFrom('domains').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at').orderBy('id').execute();

/** Every domain of every workspace (the operator's view: `mailsvc doctor`). */
export const listAllDomains = (db: Db): Promise<Domain[]> => db.selectFrom('domains').selectAll().orderBy('name').orderBy('id').execute();

export const listPendingDomains = (db: Db, checkedBefore: number, limit: number): Promise<Domain[]> =>
  db
    .selectFrom('domains')
    .selectAll()
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('last_checked_at', 'is', null), eb('last_checked_at', '<', checkedBefore)]))
    .orderBy('created_at')
    .limit(limit)
    .execute();

/** Every domain not checked since `checkedBefore` (or never), least recently checked first. */
export const listDomainsCheckedBefore = (db: Db, checkedBefore: number, limit: number): Promise<Domain[]> =>
  db
    .selectFrom('domains')
    .selectAll()
    .where((eb) => eb.or([eb('last_checked_at', 'is', null), eb('last_checked_at', '<', checkedBefore)]))
    .orderBy('last_checked_at')
    .orderBy('id')
    .limit(limit)
    .execute();

export const updateDomain = async (db: Db, id: string, changes: DomainUpdate): Promise<void> => {
  await db.updateTable('domains').set(changes).where('id', '=', id).execute();
};

export const removeDomain = async (db: Db, workspaceId: string, id: string): Promise<boolean> => {
  const result = await db.deleteFrom('domains').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
};

export const listDkimKeys = (db: Db, domainIds: string[]): Promise<DkimKey[]> =>
  domainIds.length === 0
    ? Promise.resolve([])
    : db.selectFrom('dkim_keys').selectAll().where('domain_id', 'in', domainIds).orderBy('domain_id').orderBy('position').execute();
