import type { Db } from './db.js';
import type { Suppression } from './tables.js';

/**
 * The workspace suppression list: lower-cased addresses, and `@domain` rows that cover a
 * whole domain. Scope `marketing` rows (unsubscribes) only stop marketing mail.
 */

/** Every row that covers any of `addresses` (each address and its `@domain`). */
export async function listSuppressionsCovering(db: Db, workspaceIds: readonly string[], addresses: readonly string[]): Promise<Suppression[]> {
  if (workspaceIds.length === 0 || addresses.length === 0) return [];
  const keys = new Set<string>();
  for (const a of addresses) {
    const lower = a.toLowerCase();
    keys.add(lower);
    const at = lower.lastIndexOf('@');
    if (at >= 0) keys.add(lower.slice(at));
  }
  return db
    .selectFrom('suppressions')
    .selectAll()
    .where('workspace_id', 'in', [...new Set(workspaceIds)])
    .where('address', 'in', [...keys])
    .execute();
}

/** Inserts or replaces the row for (workspace, address). */
export async function saveSuppression(db: Db, row: Suppression): Promise<void> {
  await db
    .insertInto('suppressions')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['workspace_id', 'address']).doUpdateSet({ scope: row.scope, reason: row.reason, detail: row.detail, email_id: row.email_id, created_at: row.created_at }),
    )
    .execute();
}

/** Inserts the row unless one exists (a bounce never overrides a manual entry). */
export async function saveSuppressionIfAbsent(db: Db, row: Suppression): Promise<void> {
  await db.insertInto('suppressions').values(row).onConflict((oc) => oc.columns(['workspace_id', 'address']).doNothing()).execute();
}

export const findSuppression = (db: Db, workspaceId: string, address: string): Promise<Suppression | undefined> =>
  db.selectFrom('suppressions').selectAll().where('workspace_id', '=', workspaceId).where('address', '=', address).executeTakeFirst();

export const listSuppressions = (db: Db, workspaceId: string, limit: number, offset: number): Promise<Suppression[]> =>
  db
    .selectFrom('suppressions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at', 'desc')
    .orderBy('address')
    .limit(limit)
    .offset(offset)
    .execute();

export async function countSuppressions(db: Db, workspaceId: string): Promise<number> {
  const row = await db
    .selectFrom('suppressions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function removeSuppression(db: Db, workspaceId: string, address: string): Promise<boolean> {
  const result = await db.deleteFrom('suppressions').where('workspace_id', '=', workspaceId).where('address', '=', address).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The workspace's whole-domain rows (`@domain`): few, so callers load them once. */
export const listDomainSuppressions = (db: Db, workspaceId: string): Promise<Suppression[]> =>
  db.selectFrom('suppressions').selectAll().where('workspace_id', '=', workspaceId).where('address', 'like', '@%').execute();
