import type { Db } from './db.js';
import type { DomainClaim, DomainClaimsTable } from './tables.js';
import type { Updateable } from 'kysely';

export const saveDomainClaim = async (db: Db, row: DomainClaim): Promise<void> => {
  await db.insertInto('domain_claims').values(row).execute();
};

export const findDomainClaim = (db: Db, workspaceId: string, id: string): Promise<DomainClaim | undefined> =>
  db.selectFrom('domain_claims').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

/** The workspace's latest claim of a name, or of the domain a completed claim gave it. */
export const findLatestDomainClaim = (db: Db, workspaceId: string, nameOrDomainId: string): Promise<DomainClaim | undefined> =>
  db
    .selectFrom('domain_claims')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('name', '=', nameOrDomainId), eb('domain_id', '=', nameOrDomainId)]))
    .orderBy('id', 'desc')
    .executeTakeFirst();

export const updateDomainClaim = async (db: Db, id: string, changes: Updateable<DomainClaimsTable>): Promise<void> => {
  await db.updateTable('domain_claims').set(changes).where('id', '=', id).execute();
};

/** Earlier pending claims of the name by the workspace give way to a new one. */
export const supersedeDomainClaims = async (db: Db, workspaceId: string, name: string): Promise<void> => {
  await db
    .updateTable('domain_claims')
    .set({ status: 'superseded' })
    .where('workspace_id', '=', workspaceId)
    .where('name', '=', name)
    .where('status', 'in', ['pending', 'blocked', 'verified'])
    .execute();
};

/** Every workspace's domain of this name (names are unique per workspace, not across them). */
export const listDomainsNamed = (db: Db, name: string) => db.selectFrom('domains').selectAll().where('name', '=', name).execute();

/** Whether any of these domains has mail not yet finished (scheduled, queued or being delivered). */
export const hasUnfinishedEmails = async (db: Db, domainIds: string[]): Promise<boolean> =>
  domainIds.length > 0 &&
  (await db.selectFrom('emails').select('id').where('domain_id', 'in', domainIds).where('status', 'in', ['scheduled', 'queued', 'sending', 'deferred', 'held']).limit(1).executeTakeFirst()) !== undefined;

/** Whether any of these domains sent mail at or after `since`. */
export const hasEmailsSince = async (db: Db, domainIds: string[], since: number): Promise<boolean> =>
  domainIds.length > 0 && (await db.selectFrom('emails').select('id').where('domain_id', 'in', domainIds).where('created_at', '>', since).limit(1).executeTakeFirst()) !== undefined;
