import { AppError, type ErrorOptions } from '../../shared/errors.js';

/**
 * Whether a statement failed on a unique index or primary key, on SQLite
 * (`SQLITE_CONSTRAINT_UNIQUE`/`_PRIMARYKEY`, "UNIQUE constraint failed: table.column") or on
 * PostgreSQL (23505, with the table). `table`: only a violation in that table counts.
 */
export function isUniqueViolation(err: unknown, table?: string): boolean {
  const e = err as { code?: unknown; table?: unknown; message?: unknown } | null;
  if (e === null || typeof e !== 'object') return false;
  if (e.code === '23505') return table === undefined || e.table === table;
  if (e.code !== 'SQLITE_CONSTRAINT_UNIQUE' && e.code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') return false;
  return table === undefined || String(e.message).includes(` ${table}.`);
}

/**
 * Runs a write whose unique index says "this exists already" (two concurrent creations of one
 * name, say: the index decides): a violation in `table` becomes the catalog's `already_exists`
 * with `message`, for the client to see; anything else is thrown as it was.
 */
export async function refuseDuplicate<T>(
  table: string,
  write: () => Promise<T>,
  message: string,
  options?: ErrorOptions,
): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err, table)) throw new AppError('already_exists', message, options);
    throw err;
  }
}
