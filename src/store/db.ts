import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationResult } from 'kysely';
import { createRequire } from 'node:module';
import type PG from 'pg';
import { migrations } from './migrations/index.js';
import { listeningRowCache, uncachedRows, type RowCache } from './row-cache.js';
import { CommitWatch, type CommitListener } from './commit-watch.js';
import { WalSync, type FileSync } from './wal-sync.js';
import type { Database } from './tables.js';
import type { Dialect } from './dialect.js';

export type { Dialect };
export type Db = Kysely<Database>;

export interface Store {
  db: Db;
  dialect: Dialect;
  /** A readable name of the database, with no password. */
  location: string;
  /**
   * Statements sent to the database so far (BEGIN and COMMIT included): on PostgreSQL each is
   * a network round trip, so this over messages delivered is the cost a node pays per message.
   */
  statements(): number;
  /**
   * Resolves once every write committed so far is on disk: wait for it before answering a
   * client whose data was written (the commit batcher and the HTTP layer do). PostgreSQL
   * commits durably: at once. SQLite: see WalSync.
   */
  durable(): Promise<void>;
  /** Called after each commit that inserted rows, with the tables they went into (CommitWatch). */
  onCommit(listener: CommitListener): void;
  /** Keys, workspaces and domains kept in memory where reading them costs a round trip (PostgreSQL). */
  rows: RowCache;
  close(): Promise<void>;
}

export interface OpenOptions {
  poolSize?: number;
  /** How SQLite's WAL file is made durable (tests observe it); fdatasync in the thread pool by default. */
  fileSync?: FileSync;
}

/** Opens `sqlite:PATH` or `postgres://…`; the only place that knows which engine is underneath. */
export function openStore(url: string, options: OpenOptions = {}): Store {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options.fileSync);
  if (/^postgres(ql)?:\/\//.test(url)) return openPostgres(url, options.poolSize ?? 10);
  throw new Error(`unsupported database URL: ${url.split(':')[0]}:…`);
}

/** The file of a `sqlite:PATH` URL, absolute; null for PostgreSQL and in-memory databases. */
export function sqliteFile(url: string): string | null {
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length);
  return path === ':memory:' ? null : resolve(path);
}

function openSqlite(path: string, fileSync?: FileSync): Store {
  const file = path === ':memory:' ? path : resolve(path);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL lets readers (CLI, dashboards) run beside the server. Commits do not fsync on the
  // event loop (NORMAL); whoever answers a client first waits for durable(), an fdatasync of
  // the WAL in the thread pool shared by every commit before it (WalSync): the same bar as
  // Postfix's fsync'd queue file before its 250, without stalling every other request.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const counted = { statements: 0 };
  const wal = file === ':memory:' ? null : new WalSync(`${file}-wal`, fileSync);
  const watch = new CommitWatch();
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite, counted, wal, watch.connection()) }) });
  const durable = () => wal?.durable() ?? Promise.resolve();
  return {
    db,
    dialect: 'sqlite',
    location: `sqlite:${file}`,
    statements: () => counted.statements,
    durable,
    onCommit: (listener) => watch.onCommit(listener),
    rows: uncachedRows,
    close: async () => {
      await wal?.close();
      await db.destroy();
    },
  };
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * kysely prepares every query anew; better-sqlite3 statements are reusable, and preparing
 * costs as much as running a small query. Queries are built from a fixed set of shapes, so a
 * bounded cache keyed by SQL text keeps nearly all of them prepared.
 */
function withStatementCache(sqlite: SQLite.Database, counted: { statements: number }, wal: WalSync | null, watched: ReturnType<CommitWatch['connection']>) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    // kysely prepares once per statement it runs, transactions' BEGIN and COMMIT included,
    // and runs it at once (better-sqlite3 is synchronous).
    prepare(kyselySql: string) {
      // Transactions take the write lock when they begin. Delivery threads write through
      // connections of their own, and a transaction begun deferred that reads, then writes
      // after another connection committed, fails at once with SQLITE_BUSY (the busy timeout
      // cannot help a stale snapshot); begun immediate, it waits for the lock instead.
      const sqlText = kyselySql === 'begin' ? 'begin immediate' : kyselySql;
      counted.statements++;
      wal?.noteStatement(sqlText);
      // better-sqlite3 runs the statement synchronously once prepared: a microtask comes after it.
      const ran = watched(sqlText);
      if (ran) queueMicrotask(ran);
      let statement = cache.get(sqlText);
      // A statement still iterating (a streamed query) cannot run twice at once.
      if (statement?.busy) return sqlite.prepare(sqlText);
      if (!statement) {
        statement = sqlite.prepare(sqlText);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
        cache.set(sqlText, statement);
      }
      return statement;
    },
  };
}

// The PostgreSQL driver (~13 MB resident) loads only for postgres:// URLs: the default SQLite
// node never needs it.
const loadPg = (): typeof PG => createRequire(import.meta.url)('pg') as typeof PG;

const CHANGES = /^\s*(?:insert\s+into|update|delete\s+from)\s+"(credentials|workspaces|domains)"/i;

// int8 (bigint) columns hold epoch milliseconds and counts: well inside Number's exact range.
const INT8_OID = 20;

function openPostgres(url: string, poolSize: number): Store {
  const pg = loadPg();
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types });
  // An idle connection the server closes (restart, failover, admin) is dropped by the pool and
  // replaced on the next query; without a listener the 'error' event would end the process.
  pool.on('error', () => {});
  const rows = listeningRowCache(() => new pg.Client({ connectionString: url }));
  // Every statement of every connection, BEGIN and COMMIT included: one round trip each.
  let statements = 0;
  const watch = new CommitWatch();
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    const watched = watch.connection();
    (client as { query: unknown }).query = (...args: unknown[]) => {
      statements++;
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | null)?.text;
      const ran = typeof text === 'string' ? watched(text) : null;
      const result = query(...args);
      if (ran && result instanceof Promise) void result.then(ran, () => {});
      // This node's own changes to a cached table: dropped once run, before the notification comes back.
      const changed = typeof text === 'string' ? CHANGES.exec(text)?.[1] : undefined;
      if (changed && result instanceof Promise) void result.then(() => rows.forget(changed), () => rows.forget(changed));
      return result;
    };
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const location = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
  return {
    db,
    dialect: 'postgres',
    location,
    statements: () => statements,
    durable: () => Promise.resolve(),
    onCommit: (listener) => watch.onCommit(listener),
    rows,
    close: async () => {
      await rows.close();
      await db.destroy();
    },
  };
}

export interface MigrateOutcome {
  applied: string[];
  error: unknown;
}

/** Applies every pending migration; returns what ran so the CLI can report it. */
export async function migrateToLatest(store: Store): Promise<MigrateOutcome> {
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations(store.dialect) },
  });
  const { error, results } = await migrator.migrateToLatest();
  const applied = (results ?? []).filter((r: MigrationResult) => r.status === 'Success').map((r) => r.migrationName);
  return { applied, error };
}
