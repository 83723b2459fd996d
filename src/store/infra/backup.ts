import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SQLite, type SQLiteDatabase } from './sqlite-driver.js';
import { migrations } from './migrations/index.js';
import { takeRestoreLock } from './serve-lock.js';

/**
 * Online backup and restore of the SQLite database through SQLite's backup API
 * (better-sqlite3's `backup`), never a copy of the file: under WAL a file copy can catch a
 * half-applied checkpoint. A backup reads one consistent snapshot while the server keeps
 * accepting and delivering mail (WAL readers do not block writers).
 */

export interface BackupProgress {
  totalPages: number;
  remainingPages: number;
}

export interface BackupResult {
  file: string;
  pages: number;
  bytes: number;
}

/** The backup or restore cannot be done as asked; the message says why. */
export class BackupRefused extends Error {}

/** Pages copied per step while the source is not being written (4 MiB of 4 KiB pages). */
const STEP_PAGES = 1024;
/** Copy everything in the next step. */
const ALL_PAGES = 0x7fffffff;

/**
 * Runs the backup API from `source` into `destination` with progress. SQLite restarts a
 * backup from the first page when another connection writes the source between two steps,
 * and a server under load writes every few milliseconds: once a restart is seen (fewer pages
 * done than the steps so far copied), the rest is copied in one step, which holds one read
 * snapshot of the source for its duration and always finishes.
 */
async function copyPages(
  source: SQLiteDatabase,
  destination: string,
  onProgress: (p: BackupProgress) => void,
): Promise<number> {
  let expected: number | null = null;
  let rate = STEP_PAGES;
  const done = await source.backup(destination, {
    progress({ totalPages, remainingPages }) {
      if (expected !== null && remainingPages > expected) rate = ALL_PAGES;
      expected = Math.max(0, remainingPages - rate);
      onProgress({ totalPages, remainingPages });
      return rate;
    },
  });
  onProgress({ totalPages: done.totalPages, remainingPages: 0 });
  return done.totalPages;
}

function quickCheck(db: SQLiteDatabase, what: string): void {
  const result = db.pragma('quick_check', { simple: true });
  if (result !== 'ok') throw new BackupRefused(`${what} failed its integrity check: ${String(result)}`);
}

/** Opens a file just written, sets it in order (`pragma`), then checks it. */
function settle(file: string, pragma: string, what: string): void {
  const db = new SQLite(file, { fileMustExist: true });
  try {
    db.pragma(pragma);
    quickCheck(db, what);
  } finally {
    db.close();
  }
}

/**
 * Writes a consistent copy of the live database `databaseFile` to `destination`: copied next
 * to it under a temporary name, turned into a self-contained file (rollback journal, no
 * -wal beside it), checked, then renamed into place, so `destination` is either the previous
 * file or a complete backup, never half of one.
 */
export async function backupDatabase(
  databaseFile: string,
  destination: string,
  onProgress: (p: BackupProgress) => void,
): Promise<BackupResult> {
  if (!existsSync(databaseFile)) throw new BackupRefused(`no database at ${databaseFile}`);
  if (!existsSync(dirname(destination))) throw new BackupRefused(`directory ${dirname(destination)} does not exist`);
  const partial = join(dirname(destination), `.${basename(destination)}.partial-${process.pid}`);
  rmSync(partial, { force: true });
  const source = new SQLite(databaseFile, { fileMustExist: true, timeout: 5000 });
  try {
    const pages = await copyPages(source, partial, onProgress);
    settle(partial, 'journal_mode = DELETE', 'the backup');
    renameSync(partial, destination);
    return { file: destination, pages, bytes: statSync(destination).size };
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  } finally {
    source.close();
  }
}

/**
 * Replaces the database `databaseFile` with the backup `backupFile`, through the backup API
 * (so a stale -wal of the old database cannot be replayed over the restored pages). Refused
 * while a server holds the database, and for a file that is not a sound mailsvc backup of
 * this version or an older one (newer schemas are not understood by this program).
 */
export async function restoreDatabase(
  backupFile: string,
  databaseFile: string,
  onProgress: (p: BackupProgress) => void,
): Promise<BackupResult> {
  if (!existsSync(backupFile)) throw new BackupRefused(`no backup at ${backupFile}`);
  let source: SQLiteDatabase;
  try {
    source = new SQLite(backupFile, { readonly: true, fileMustExist: true });
    quickCheck(source, backupFile);
  } catch (err) {
    if (err instanceof BackupRefused) throw err;
    throw new BackupRefused(`${backupFile} is not a SQLite database: ${(err as Error).message}`);
  }
  try {
    checkSchema(source, backupFile);
    mkdirSync(dirname(databaseFile), { recursive: true });
    const lock = takeRestoreLock(databaseFile);
    try {
      const pages = await copyPages(source, databaseFile, onProgress);
      settle(databaseFile, 'wal_checkpoint(TRUNCATE)', 'the restored database');
      return { file: databaseFile, pages, bytes: statSync(databaseFile).size };
    } finally {
      lock.release();
    }
  } finally {
    source.close();
  }
}

/** A mailsvc database whose migrations this program knows (it may be older: serve migrates it). */
function checkSchema(db: SQLiteDatabase, file: string): void {
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'").get();
  if (!hasTable) throw new BackupRefused(`${file} is not a mailsvc database (no migration table)`);
  const known = new Set(Object.keys(migrations('sqlite')));
  const unknown = (db.prepare('SELECT name FROM kysely_migration ORDER BY name').all() as Array<{ name: string }>)
    .map((r) => r.name)
    .filter((n) => !known.has(n));
  if (unknown.length > 0)
    throw new BackupRefused(
      `${file} comes from a newer mailsvc (migrations ${unknown.join(', ')}); restore it with that version`,
    );
}
