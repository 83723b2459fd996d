import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SQLite, type SQLiteDatabase } from './sqlite-driver.js';

/**
 * Whether a server has a SQLite database open, told reliably: every `mailsvc serve` holds a
 * shared lock on a small file beside the database (`<database>.serve-lock`), and `mailsvc db
 * restore` takes it exclusively, so a restore cannot start while a server runs and a server
 * cannot start while a restore runs. A server also holds `<database>.node-lock` exclusively: a
 * SQLite database has one server, which is what lets it give back every lease as it starts
 * (no other process can hold one). The locks are SQLite transactions on those files, that is
 * fcntl locks the operating system drops when the process ends, kill -9 included: no stale pid
 * file to clean up.
 */

interface ServeLock {
  release(): void;
}

/** The lock is held by the other side (a server for a restore, a restore for a server). */
export class ServeLockBusy extends Error {}

const serveLockFile = (databaseFile: string): string => `${databaseFile}.serve-lock`;

function open(lockFile: string): SQLiteDatabase {
  mkdirSync(dirname(lockFile), { recursive: true });
  // No busy timeout: the answer is wanted now, not after the other side finishes.
  return new SQLite(lockFile, { timeout: 0 });
}

const isBusy = (err: unknown): boolean => (err as { code?: string })?.code?.startsWith('SQLITE_BUSY') === true;

function hold(lockFile: string, begin: string, read: boolean, busy: string): ServeLock {
  const db = open(lockFile);
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
export function holdServeLock(databaseFile: string): ServeLock {
  const serve = hold(
    serveLockFile(databaseFile),
    'BEGIN',
    true,
    `a restore (mailsvc db restore) is writing ${databaseFile}; start the server once it has finished`,
  );
  let node: ServeLock;
  try {
    node = hold(
      `${databaseFile}.node-lock`,
      'BEGIN EXCLUSIVE',
      false,
      `another mailsvc serve is running on ${databaseFile}: a SQLite database has one server (run several nodes on PostgreSQL)`,
    );
  } catch (err) {
    serve.release();
    throw err;
  }
  return {
    release() {
      node.release();
      serve.release();
    },
  };
}

/** Taken by `mailsvc db restore`: only when no server holds the database. */
export const takeRestoreLock = (databaseFile: string): ServeLock =>
  hold(
    serveLockFile(databaseFile),
    'BEGIN EXCLUSIVE',
    false,
    `a mailsvc server is running on ${databaseFile}: stop it first (e.g. systemctl stop mailsvc), then restore`,
  );
