import type { Store } from './db.js';
import type { Database } from './tables.js';

type TableName = keyof Database;

/**
 * Every table in foreign-key order: a row's parents are copied before it. A table the
 * migrations create but this list lacks stops the copy (see tablesToCopy) instead of being
 * left behind.
 */
export const COPY_ORDER: readonly TableName[] = [
  'workspaces',
  'credentials',
  'domains',
  'dkim_keys',
  'emails',
  'email_contents',
  'queue_items',
  'delivery_attempts',
  'events',
  'idempotency_keys',
  'templates',
  'suppressions',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'subscribers',
  'subscriber_tags',
  'audiences',
  'audience_members',
  'campaigns',
  'rate_limit_windows',
];

// PostgreSQL takes at most 65,535 parameters per statement; 500 rows of our widest table
// stay far below that.
const BATCH_ROWS = 500;

export type CopyProgress =
  | { kind: 'table'; table: string; rows: number }
  | { kind: 'batch'; table: string; copied: number; rows: number };

export interface CopiedTable {
  table: string;
  source: number;
  target: number;
}

export class CopyRefused extends Error {}

/** The application's tables in the store (migration bookkeeping excluded). */
async function tableNames(store: Store): Promise<string[]> {
  const tables = await store.db.introspection.getTables();
  return tables.map((t) => t.name).filter((n) => !n.startsWith('kysely_'));
}

async function countRows(db: Store['db'], table: TableName): Promise<number> {
  const row = await db.selectFrom(table).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Refuses tables this code does not know: copying a newer schema would lose them. */
export async function tablesToCopy(source: Store): Promise<TableName[]> {
  const unknown = (await tableNames(source)).filter((n) => !COPY_ORDER.includes(n as TableName));
  if (unknown.length > 0) throw new CopyRefused(`source has tables this version cannot copy: ${unknown.join(', ')}`);
  return [...COPY_ORDER];
}

/** Refuses a target holding any row: the copy is for moving into a fresh database. */
export async function assertEmpty(target: Store, tables: readonly TableName[]): Promise<void> {
  for (const table of tables) {
    if ((await countRows(target.db, table)) > 0) throw new CopyRefused(`target is not empty: table ${table} has rows (db copy only fills a fresh database)`);
  }
}

/**
 * Copies every row from `source` into `target` (both migrated to the same version) in one
 * target transaction: a failure leaves the target as empty as it was. Row counts per table
 * are compared before commit.
 */
export async function copyDatabase(source: Store, target: Store, onProgress: (p: CopyProgress) => void): Promise<CopiedTable[]> {
  const tables = await tablesToCopy(source);
  await assertEmpty(target, tables);
  return target.db.transaction().execute(async (trx) => {
    const copied: CopiedTable[] = [];
    for (const table of tables) {
      const rows = await countRows(source.db, table);
      onProgress({ kind: 'table', table, rows });
      let done = 0;
      let batch: Record<string, unknown>[] = [];
      const flush = async () => {
        if (batch.length === 0) return;
        await trx.insertInto(table).values(batch as never).execute();
        done += batch.length;
        batch = [];
        onProgress({ kind: 'batch', table, copied: done, rows });
      };
      for await (const row of source.db.selectFrom(table).selectAll().stream(BATCH_ROWS)) {
        batch.push(row as Record<string, unknown>);
        if (batch.length >= BATCH_ROWS) await flush();
      }
      await flush();
      const inTarget = await countRows(trx as never, table);
      if (inTarget !== rows) throw new Error(`row count differs for ${table}: source ${rows}, target ${inTarget}`);
      copied.push({ table, source: rows, target: inTarget });
    }
    return copied;
  });
}
