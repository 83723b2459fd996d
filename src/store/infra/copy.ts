import { sql } from 'kysely';
import type { Store } from './db.js';
import type { Database } from '../tables.js';

type TableName = keyof Database;

// PostgreSQL takes at most 65,535 parameters per statement; 500 rows of our widest table
// stay far below that.
const BATCH_ROWS = 500;

type CopyProgress =
  { kind: 'table'; table: string; rows: number } | { kind: 'batch'; table: string; copied: number; rows: number };

interface CopiedTable {
  table: string;
  source: number;
  target: number;
}

export class CopyRefused extends Error {}

/**
 * The application's tables in the store (migration bookkeeping excluded, and SQLite's full-text
 * index: an FTS5 virtual table and its shadow tables are derived from their table's rows, and
 * PostgreSQL keeps its own index of them).
 */
export async function listApplicationTables(store: Store): Promise<string[]> {
  const tables = await store.db.introspection.getTables();
  const derived =
    store.dialect === 'sqlite'
      ? new Set(
          (
            await sql<{ name: string }>`select name from pragma_table_list where type in ('virtual', 'shadow')`.execute(
              store.db,
            )
          ).rows.map((r) => r.name),
        )
      : new Set<string>();
  return tables.map((t) => t.name).filter((n) => !n.startsWith('kysely_') && !derived.has(n));
}

async function countRows(db: Store['db'], table: TableName): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Every table of the SQLite source in foreign-key order (parents before children), read from
 * the schema itself, so tables added by later migrations are copied with no list to keep.
 */
async function tablesToCopy(source: Store): Promise<TableName[]> {
  if (source.dialect !== 'sqlite') throw new CopyRefused('db copy reads from a SQLite database');
  const names = await listApplicationTables(source);
  const parents = new Map<string, string[]>();
  for (const name of names) {
    const { rows } = await sql<{ table: string }>`select "table" from pragma_foreign_key_list(${name})`.execute(
      source.db,
    );
    parents.set(
      name,
      rows.map((r) => r.table).filter((t) => t !== name),
    );
  }
  const ordered: string[] = [];
  const visiting = new Set<string>();
  const visit = (name: string) => {
    if (ordered.includes(name)) return;
    if (visiting.has(name)) throw new CopyRefused(`foreign keys form a cycle through ${name}`);
    visiting.add(name);
    for (const parent of parents.get(name) ?? []) visit(parent);
    visiting.delete(name);
    ordered.push(name);
  };
  for (const name of [...names].sort()) visit(name);
  return ordered as TableName[];
}

/** Refuses a target holding any row: the copy is for moving into a fresh database. */
async function assertEmpty(target: Store, tables: readonly TableName[]): Promise<void> {
  for (const table of tables) {
    if ((await countRows(target.db, table)) > 0)
      throw new CopyRefused(`target is not empty: table ${table} has rows (db copy only fills a fresh database)`);
  }
}

/**
 * Copies every row from `source` into `target` (both migrated to the same version) in one
 * target transaction: a failure leaves the target as empty as it was. Row counts per table
 * are compared before commit.
 */
export async function copyDatabase(
  source: Store,
  target: Store,
  onProgress: (p: CopyProgress) => void,
): Promise<CopiedTable[]> {
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
        await trx.insertInto(table).values(batch).execute();
        done += batch.length;
        batch = [];
        onProgress({ kind: 'batch', table, copied: done, rows });
      };
      for await (const row of source.db.selectFrom(table).selectAll().stream(BATCH_ROWS)) {
        batch.push(row);
        if (batch.length >= BATCH_ROWS) await flush();
      }
      await flush();
      const inTarget = await countRows(trx, table);
      if (inTarget !== rows) throw new Error(`row count differs for ${table}: source ${rows}, target ${inTarget}`);
      copied.push({ table, source: rows, target: inTarget });
    }
    if (target.dialect === 'postgres') await continueIdentities(trx);
    return copied;
  });
}

/**
 * Identity columns (events.seq) took the source's values as given; their sequences restart
 * after the largest, or the next row written would reuse a copied number.
 */
async function continueIdentities(db: Store['db']): Promise<void> {
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    select table_name, column_name from information_schema.columns where is_identity = 'YES' and table_schema = current_schema()`.execute(
    db,
  );
  for (const { table_name: table, column_name: column } of rows) {
    await sql`select setval(pg_get_serial_sequence(${table}, ${column}), coalesce((select max(${sql.ref(column)}) from ${sql.table(table)}), 0) + 1, false)`.execute(
      db,
    );
  }
}
