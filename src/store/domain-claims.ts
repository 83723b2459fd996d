import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { DomainClaimsTable } from './tables/domains.js';

export { DOMAIN_CLAIM_STATUSES, type DomainClaimBlockedReason, type DomainClaimStatus } from './tables/domains.js';

// The settings are the domain service's input (services/domains/domains.ts): the store keeps the document.
const domainClaimRows = rowCodec<Selectable<DomainClaimsTable>>()({ settings: jsonOrNull<unknown>() });

/** A workspace's claim of a domain other workspaces hold; `settings` are applied once it completes. */
export type DomainClaim = EntityOf<typeof domainClaimRows>;

export const saveDomainClaim = async (db: Db, claim: DomainClaim): Promise<void> => {
  await db.insertInto('domain_claims').values(domainClaimRows.encode(claim)).execute();
};

export const findDomainClaim = async (db: Db, workspaceId: string, id: string): Promise<DomainClaim | undefined> => {
  const row = await db
    .selectFrom('domain_claims')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && domainClaimRows.decode(row);
};

/** The workspace's latest claim of a name, or of the domain a completed claim gave it. */
export const findLatestDomainClaim = async (
  db: Db,
  workspaceId: string,
  nameOrDomainId: string,
): Promise<DomainClaim | undefined> => {
  const row = await db
    .selectFrom('domain_claims')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('name', '=', nameOrDomainId), eb('domain_id', '=', nameOrDomainId)]))
    .orderBy('id', 'desc')
    .executeTakeFirst();
  return row && domainClaimRows.decode(row);
};

export const updateDomainClaim = async (
  db: Db,
  id: string,
  changes: Partial<Omit<DomainClaim, 'id'>>,
): Promise<void> => {
  await db.updateTable('domain_claims').set(domainClaimRows.encode(changes)).where('id', '=', id).execute();
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

/** Whether any of these domains has mail not yet finished (scheduled, queued or being delivered). */
export const hasUnfinishedEmails = async (db: Db, domainIds: string[]): Promise<boolean> =>
  domainIds.length > 0 &&
  (await db
    .selectFrom('emails')
    .select('id')
    .where('domain_id', 'in', domainIds)
    .where('status', 'in', ['scheduled', 'queued', 'sending', 'deferred', 'held'])
    .limit(1)
    .executeTakeFirst()) !== undefined;

/** Whether any of these domains sent mail at or after `since`. */
export const hasEmailsSince = async (db: Db, domainIds: string[], since: number): Promise<boolean> =>
  domainIds.length > 0 &&
  (await db
    .selectFrom('emails')
    .select('id')
    .where('domain_id', 'in', domainIds)
    .where('created_at', '>', since)
    .limit(1)
    .executeTakeFirst()) !== undefined;
