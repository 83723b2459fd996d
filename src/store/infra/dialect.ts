import { sql, type RawBuilder } from 'kysely';

/**
 * What differs between the two engines, in one place: the schema's binary type, reading JSON
 * kept as text, and how many transactions may commit at once. Everything else (epoch
 * milliseconds, JSON as text, 0/1 booleans) is written once for both. SKIP LOCKED, the one
 * difference in how rows are claimed, lives with the claims (lease.ts).
 */
export type Dialect = 'sqlite' | 'postgres';

/** The column type of raw message bytes. */
export const blobType = (dialect: Dialect): 'bytea' | 'blob' => (dialect === 'postgres' ? 'bytea' : 'blob');

/** A field of a JSON document kept as text in `column` (e.g. `e.data`), as text; `path` is dotted (`bounce.type`). */
export const jsonText = (dialect: Dialect, column: string, path: string): RawBuilder<string | null> =>
  dialect === 'postgres'
    ? sql<string | null>`(${sql.ref(column)}::json #>> ${sql.lit(`{${path.split('.').join(',')}}`)})`
    : sql<string | null>`json_extract(${sql.ref(column)}, ${sql.lit(`$.${path}`)})`;

/**
 * Transactions the commit batcher runs side by side: SQLite has one writer; on PostgreSQL every
 * statement is a round trip, so half the pool commits while the rest serves reads and claims.
 */
export const commitConcurrency = (dialect: Dialect, poolSize: number): number =>
  dialect === 'postgres' ? Math.max(1, Math.floor(poolSize / 2)) : 1;

/**
 * Whether a JSON boolean kept as text in `column` is true: SQLite reads JSON true back as 1,
 * PostgreSQL as 'true'; as text, both compare the same.
 */
export const jsonTrue = (dialect: Dialect, column: string, path: string): RawBuilder<boolean> =>
  sql<boolean>`(cast(${jsonText(dialect, column, path)} as text) in ('1', 'true'))`;
