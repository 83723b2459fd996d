import { normalizeDomain } from '../shared/domain-name.js';
import { isUuid } from '../shared/ids.js';
import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { flagOrNull, jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { DkimKeysTable, DomainsTable } from './tables/domains.js';
import { refuseDuplicate } from './infra/unique-violation.js';

export { DOMAIN_TLS, type DomainStatus, type DomainTls } from './tables/domains.js';

const domainRows = rowCodec<Selectable<DomainsTable>>()({
  metadata: jsonOrNull<Record<string, unknown>>(),
  // The checks' shape is checks/domain-checks.ts's (domainChecksOf): the store keeps the document.
  checks: jsonOrNull<unknown>(),
  open_tracking: flagOrNull,
  click_tracking: flagOrNull,
});

/** A sending domain; `open_tracking`/`click_tracking` null: the server's default. */
export type Domain = EntityOf<typeof domainRows>;
/** One DKIM token of a domain: its selector and key pair. */
export type DkimKey = Selectable<DkimKeysTable>;

/** A new domain with its keys; `already_exists` when the workspace has one of that name (two concurrent adds: the unique index decides). */
export const saveDomain = (db: Db, domain: Domain, keys: DkimKey[]): Promise<void> =>
  refuseDuplicate(
    'domains',
    () =>
      db.transaction().execute(async (trx) => {
        await trx.insertInto('domains').values(domainRows.encode(domain)).execute();
        await trx.insertInto('dkim_keys').values(keys).execute();
      }),
    `Domain ${domain.name} already exists`,
    { field: 'domain' },
  );

export const findDomain = async (db: Db, workspaceId: string, id: string): Promise<Domain | undefined> => {
  const row = await db
    .selectFrom('domains')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && domainRows.decode(row);
};

/** A domain of any workspace (the reputation guard's round). */
export const findDomainById = async (db: Db, id: string): Promise<Domain | undefined> => {
  const row = await db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirst();
  return row && domainRows.decode(row);
};

export const findDomainByName = async (db: Db, workspaceId: string, name: string): Promise<Domain | undefined> => {
  const row = await db
    .selectFrom('domains')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', name)
    .executeTakeFirst();
  return row && domainRows.decode(row);
};

/** A workspace's domain by id or by name (any case); ids are only looked up when they are uuids. */
export async function findDomainByIdOrName(db: Db, workspaceId: string, idOrName: string): Promise<Domain | undefined> {
  const byId = isUuid(idOrName) ? await findDomain(db, workspaceId, idOrName.toLowerCase()) : undefined;
  if (byId) return byId;
  const name = normalizeDomain(idOrName);
  return name ? findDomainByName(db, workspaceId, name) : undefined;
}

export const listDomains = async (db: Db, workspaceId: string): Promise<Domain[]> =>
  domainRows.decodeAll(
    await db
      .selectFrom('domains')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
  );

/** Every domain of every workspace (the operator's view: `mailsvc doctor`). */
export const listAllDomains = async (db: Db): Promise<Domain[]> =>
  domainRows.decodeAll(await db.selectFrom('domains').selectAll().orderBy('name').orderBy('id').execute());

/** Every workspace's domain of this name (names are unique per workspace, not across them). */
export const listDomainsNamed = async (db: Db, name: string): Promise<Domain[]> =>
  domainRows.decodeAll(await db.selectFrom('domains').selectAll().where('name', '=', name).execute());

/** The name of every domain, by id. */
export const listDomainNames = async (db: Db): Promise<Map<string, string>> =>
  new Map((await db.selectFrom('domains').select(['id', 'name']).execute()).map((d) => [d.id, d.name]));

export const listPendingDomains = async (db: Db, checkedBefore: number, limit: number): Promise<Domain[]> =>
  domainRows.decodeAll(
    await db
      .selectFrom('domains')
      .selectAll()
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('last_checked_at', 'is', null), eb('last_checked_at', '<', checkedBefore)]))
      .orderBy('created_at')
      .limit(limit)
      .execute(),
  );

/** Every domain not checked since `checkedBefore` (or never), least recently checked first. */
export const listDomainsCheckedBefore = async (db: Db, checkedBefore: number, limit: number): Promise<Domain[]> =>
  domainRows.decodeAll(
    await db
      .selectFrom('domains')
      .selectAll()
      .where((eb) => eb.or([eb('last_checked_at', 'is', null), eb('last_checked_at', '<', checkedBefore)]))
      .orderBy('last_checked_at')
      .orderBy('id')
      .limit(limit)
      .execute(),
  );

export const updateDomain = async (db: Db, id: string, changes: Partial<Omit<Domain, 'id'>>): Promise<void> => {
  await db.updateTable('domains').set(domainRows.encode(changes)).where('id', '=', id).execute();
};

export const removeDomain = async (db: Db, workspaceId: string, id: string): Promise<boolean> => {
  const result = await db
    .deleteFrom('domains')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
};

export const listDkimKeys = (db: Db, domainIds: string[]): Promise<DkimKey[]> =>
  domainIds.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom('dkim_keys')
        .selectAll()
        .where('domain_id', 'in', domainIds)
        .orderBy('domain_id')
        .orderBy('position')
        .execute();
