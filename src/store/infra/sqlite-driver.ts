import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * better-sqlite3, in the major that runs safely on this Node.js. Version 12 (pinned) on Node
 * 20; version 13 (Node-API; installed as `better-sqlite3-napi`) from Node 22 on: on Node 24,
 * 12's objects register an environment clean-up hook (Node's ObjectWrap changed), and a
 * statement collected where no environment is current aborts the process (`Assertion failed:
 * (env) != nullptr` in RemoveEnvironmentCleanupHook; upstream WiseLibs/better-sqlite3#1515,
 * closed without a fix in 12), while 13 needs Node 22 and crashes on 20. Same API, one import.
 */
const major = Number(process.versions.node.split('.')[0]);

/**
 * The package loaded. Every connection in a process must come from this one copy: two copies of
 * SQLite in one process do not see each other's locks (each keeps its own table of the file's
 * POSIX locks), so a second copy could write under a transaction of the first.
 */
export const SQLITE_MODULE = major >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3';

export const SQLite: typeof BetterSqlite3 = createRequire(import.meta.url)(SQLITE_MODULE) as typeof BetterSqlite3;
export type SQLiteDatabase = BetterSqlite3.Database;
export type SQLiteStatement = BetterSqlite3.Statement;
