import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';

/**
 * Whether a server has a SQLite database open, told reliably: every `mailsvc serve` holds a
 * shared lock on a small file beside the database (`<database>.serve-lock`), and `mailsvc db
 * restore` takes it exclusively, so a restore cannot start while a server runs and a server
 * cannot start while a restore runs. The lock is a SQLite read transaction on that file, that
 * is an fcntl lock the operating system drops when the process ends, kill -9 included: no
 * stale pid file to clean up. Several servers may hold it at once.
 */

export interface ServeLock {
  release(): void;
}

/** The lock is held by the other side (a server for a restore, a restore for a server). */
export class ServeLockBusy extends Error {}

export const serveLockFile = (databaseFile: string): string => `${databaseFile}.serve-lock`;

function open(databaseFile: string): SQLite.Database {
  mkdirSync(dirname(databaseFile), { recursive: true });
  // No busy timeout: the answer is wanted now, not after the other side finishes.
  return new SQLite(serveLockFile(databaseFile), { timeout: 0 });
}

const isBusy = (err: unknown): boolean => (err as { code?: string })?.code?.startsWith('SQLITE_BUSY') === true;

function hold(databaseFile: string, begin: string, read: boolean, busy: string): ServeLock {
  const db = open(databaseFile);
  try {
    db.prepare(begin).run();
    // A deferred transaction takes its shared lock at its first read.
    if (read) db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (err) {
    db.close();
    if (isBusy(err)) throw new ServeLockBusy(busy);
    throw err;
  }
  return {
    release() {
      if (!db.open) return;
      db.prepare('ROLLBACK').run();
      db.close();
    },
  };
}

/** Taken by `mailsvc serve` for as long as it runs. */
export const holdServeLock = (databaseFile: string): ServeLock =>
  hold(databaseFile, 'BEGIN', true, `a restore (mailsvc db restore) is writing ${databaseFile}; start the server once it has finished`);

/** Taken by `mailsvc db restore`: only when no server holds the database. */
export const takeRestoreLock = (databaseFile: string): ServeLock =>
  hold(databaseFile, 'BEGIN EXCLUSIVE', false, `a mailsvc server is running on ${databaseFile}: stop it first (e.g. systemctl stop mailsvc), then restore`);
