import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { domainOf } from '../shared/domain-name.js';
import { readTimePage, type ListPage, type PageOf } from './infra/list-page.js';
import type { SuppressionsTable } from './tables/suppressions.js';

export type { SuppressionScope } from './tables/suppressions.js';

/** An address (or `@domain`) no mail goes to: every column is kept as it is read. */
export type Suppression = Selectable<SuppressionsTable>;
export type SuppressionReason = Suppression['reason'];

/**
 * The workspace suppression list: lower-cased addresses, and `@domain` rows that cover a
 * whole domain. Scope `marketing` rows (unsubscribes) only stop marketing mail.
 */

/** Every row that covers any of `addresses` (each address and its `@domain`). */
export async function listSuppressionsCovering(
  db: Db,
  workspaceIds: readonly string[],
  addresses: readonly string[],
): Promise<Suppression[]> {
  if (workspaceIds.length === 0 || addresses.length === 0) return [];
  const keys = new Set<string>();
  for (const a of addresses) {
    const lower = a.toLowerCase();
    keys.add(lower);
    if (lower.includes('@')) keys.add(`@${domainOf(lower)}`);
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
      oc.columns(['workspace_id', 'address']).doUpdateSet({
        scope: row.scope,
        reason: row.reason,
        detail: row.detail,
        email_id: row.email_id,
        created_at: row.created_at,
      }),
    )
    .execute();
}

/** Inserts the row unless one exists (a bounce never overrides a manual entry). */
export async function saveSuppressionIfAbsent(db: Db, row: Suppression): Promise<void> {
  await db
    .insertInto('suppressions')
    .values(row)
    .onConflict((oc) => oc.columns(['workspace_id', 'address']).doNothing())
    .execute();
}

export const findSuppression = (db: Db, workspaceId: string, address: string): Promise<Suppression | undefined> =>
  db
    .selectFrom('suppressions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('address', '=', address)
    .executeTakeFirst();

interface SuppressionFilter {
  workspaceId: string;
  reasons?: readonly Suppression['reason'][] | undefined;
}

const suppressionsOf = (db: Db, filter: SuppressionFilter) => {
  let q = db.selectFrom('suppressions').where('workspace_id', '=', filter.workspaceId);
  if (filter.reasons !== undefined) q = q.where('reason', 'in', [...filter.reasons]);
  return q;
};

/** Newest first; a cursor is an address (or `@domain`) of the list. */
export async function listSuppressions(
  db: Db,
  filter: SuppressionFilter,
  page: ListPage,
): Promise<PageOf<Suppression>> {
  const cursor = page.after ?? page.before;
  const cursorTime =
    cursor === undefined
      ? undefined
      : (await findSuppression(db, filter.workspaceId, cursor.toLowerCase()))?.created_at;
  const keyed = {
    ...page,
    ...(page.after !== undefined ? { after: page.after.toLowerCase() } : {}),
    ...(page.before !== undefined ? { before: page.before.toLowerCase() } : {}),
  };
  return readTimePage(
    suppressionsOf(db, filter).selectAll(),
    { time: 'created_at', key: 'address' },
    keyed,
    cursorTime,
  );
}

export async function countSuppressions(
  db: Db,
  workspaceId: string,
  reasons?: readonly Suppression['reason'][],
): Promise<number> {
  const row = await suppressionsOf(db, { workspaceId, reasons })
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function removeSuppression(db: Db, workspaceId: string, address: string): Promise<boolean> {
  const result = await db
    .deleteFrom('suppressions')
    .where('workspace_id', '=', workspaceId)
    .where('address', '=', address)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The workspace's whole-domain rows (`@domain`): few, so callers load them once. */
export const listDomainSuppressions = (db: Db, workspaceId: string): Promise<Suppression[]> =>
  db
    .selectFrom('suppressions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('address', 'like', '@%')
    .execute();
