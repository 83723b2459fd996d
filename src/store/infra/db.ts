import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SQLite, type SQLiteDatabase, type SQLiteStatement } from './sqlite-driver.js';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type MigrationResult } from 'kysely';
import { createRequire } from 'node:module';
import type PG from 'pg';
import { migrations } from './migrations/index.js';
import { listeningRowCache, uncachedRows, type RowCache } from './row-cache.js';
import { CommitWatch, type CommitListener } from './commit-watch.js';
import { WalSync, type FileSync } from './wal-sync.js';
import { faultClassifying } from './fault-driver.js';
import { Ambience, registerAmbience } from './ambient-transaction.js';
import type { Logger } from '../../shared/logger.js';
import type { Database } from '../tables.js';
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
  /**
   * Runs `work` on a database handle without the statement timeouts (PostgreSQL: one
   * connection of its own): for migrations, which may build an index over a large table.
   */
  unbounded<T>(work: (db: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

interface OpenOptions {
  poolSize?: number;
  /**
   * Longest wait for a connection (PostgreSQL: a pool slot or a new connection; SQLite: the
   * write lock), so that a request answers a clear refusal instead of hanging.
   */
  acquireTimeoutMs?: number;
  /** PostgreSQL: longest a statement may run (statement_timeout); 0 for none. */
  statementTimeoutMs?: number;
  /** Where lost connections are reported. */
  logger?: Logger;
  /** How SQLite's WAL file is made durable (tests observe it); fdatasync in the thread pool by default. */
  fileSync?: FileSync;
}

/** The settings of the configuration file the store reads (config/schema.ts declares them). */
interface DatabaseSettings {
  databasePoolSize: number;
  databaseAcquireTimeoutMs: number;
  databaseStatementTimeoutMs: number;
}

export const storeOptions = (c: DatabaseSettings, logger?: Logger): OpenOptions => ({
  poolSize: c.databasePoolSize,
  acquireTimeoutMs: c.databaseAcquireTimeoutMs,
  statementTimeoutMs: c.databaseStatementTimeoutMs,
  ...(logger ? { logger } : {}),
});

/** Opens `sqlite:PATH` or `postgres://…`; the only place that knows which engine is underneath. */
export function openStore(url: string, options: OpenOptions = {}): Store {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options);
  if (/^postgres(ql)?:\/\//.test(url)) return openPostgres(url, options);
  throw new Error(`unsupported database URL: ${url.split(':')[0]}:…`);
}

/** The file of a `sqlite:PATH` URL, absolute; null for PostgreSQL and in-memory databases. */
export function sqliteFile(url: string): string | null {
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length);
  return path === ':memory:' ? null : resolve(path);
}

const DEFAULT_ACQUIRE_TIMEOUT_MS = 5000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

function openSqlite(path: string, options: OpenOptions): Store {
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
  // Bounded: better-sqlite3 waits for another connection's write lock (a delivery thread's, the
  // CLI's) synchronously, and past it the statement fails as a busy database (a retryable 503).
  sqlite.pragma(`busy_timeout = ${Math.round(options.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS)}`);
  const counted = { statements: 0 };
  const wal = file === ':memory:' ? null : new WalSync(`${file}-wal`, options.fileSync);
  const watch = new CommitWatch();
  const ambience = new Ambience();
  const db = new Kysely<Database>({
    dialect: faultClassifying(
      new SqliteDialect({ database: withStatementCache(sqlite, counted, wal, watch.connection()) }),
      ambience,
    ),
  });
  registerAmbience(db, ambience);
  const durable = () => wal?.durable() ?? Promise.resolve();
  return {
    db,
    dialect: 'sqlite',
    location: `sqlite:${file}`,
    statements: () => counted.statements,
    durable,
    onCommit: (listener) => watch.onCommit(listener),
    rows: uncachedRows,
    unbounded: (work) => work(db),
    close: async () => {
      await wal?.close();
      await db.destroy();
    },
  };
}

/**
 * The statement cache's bound, in bytes of SQL text. A prepared statement holds about 25 to 100
 * times its text in SQLite's memory (a short select 4 KB, an insert of ten rows 20 KB, an
 * `IN (?, …)` of 500 ids with RETURNING 100 KB; measured with better-sqlite3), so 128 KB of
 * text is at most about 3 to 12 MB per connection. The server's working set is about 250
 * statements and 40 KB of text (the main thread's connection after the delivery tests; a
 * delivery thread's 50 and 10 KB); what varies without end is the length of `IN` lists and
 * multi-row inserts, one statement per length, and those are what a bound of 500 entries
 * used to keep (26 MB for 500 `IN` lists of 1 to 500 ids).
 */
export const STATEMENT_CACHE_BYTES = 128 * 1024;

/**
 * kysely prepares every query anew; better-sqlite3 statements are reusable, and preparing
 * costs as much as running a small query. Queries are built from a fixed set of shapes, so a
 * cache keyed by SQL text, bounded by the text's bytes and dropping the least recently used,
 * keeps nearly all of them prepared.
 */
export function withStatementCache(
  sqlite: SQLiteDatabase,
  counted: { statements: number },
  wal: WalSync | null,
  watched: ReturnType<CommitWatch['connection']>,
) {
  // In the order of last use: a Map iterates in insertion order, and a hit is moved to the end.
  const cache = new Map<string, SQLiteStatement>();
  let bytes = 0;
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
      if (statement) {
        cache.delete(sqlText);
      } else if (sqlText.length > STATEMENT_CACHE_BYTES / 8) {
        // Rare and long (a list of thousands of ids): not worth the statements it would push out.
        return sqlite.prepare(sqlText);
      } else {
        statement = sqlite.prepare(sqlText);
        bytes += sqlText.length;
        for (const [text] of cache) {
          if (bytes <= STATEMENT_CACHE_BYTES) break;
          cache.delete(text);
          bytes -= text.length;
        }
      }
      cache.set(sqlText, statement);
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

function openPostgres(url: string, options: OpenOptions): Store {
  const pg = loadPg();
  const acquireTimeoutMs = options.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS;
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID
        ? (value: string) => Number(value)
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    types,
    // Waiting for a free connection or for a new one to open ends here, as a retryable fault.
    connectionTimeoutMillis: acquireTimeoutMs,
    // A peer that vanished without closing (a failover, a cut network) is found by TCP
    // keepalive, and a statement that never answers by the client's own timer.
    keepAlive: true,
    ...(statementTimeoutMs > 0
      ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + 5000 }
      : {}),
  });
  const lost = (err: Error) =>
    options.logger?.warn(
      { err: { message: err.message, code: (err as { code?: unknown }).code } },
      'a database connection was lost; it is replaced on next use',
    );
  // An idle connection the server closes (restart, failover, admin) is dropped by the pool and
  // replaced on the next query; without a listener the 'error' event would end the process.
  pool.on('error', lost);
  const rows = listeningRowCache(() => new pg.Client({ connectionString: url }));
  // Every statement of every connection, BEGIN and COMMIT included: one round trip each.
  let statements = 0;
  const watch = new CommitWatch();
  pool.on('connect', (client) => {
    // A connection checked out (kysely holds one through a transaction) has no listener of the
    // pool's: one dropped then would raise an unhandled 'error' and end the process. The
    // statement in flight fails (a fault, store/infra/fault-driver.ts) and the pool discards the
    // connection when it comes back.
    client.on('error', () => {});
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
      if (changed && result instanceof Promise)
        void result.then(
          () => rows.forget(changed),
          () => rows.forget(changed),
        );
      return result;
    };
  });
  const ambience = new Ambience();
  const db = new Kysely<Database>({ dialect: faultClassifying(new PostgresDialect({ pool }), ambience) });
  registerAmbience(db, ambience);
  const location = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
  return {
    db,
    dialect: 'postgres',
    location,
    statements: () => statements,
    durable: () => Promise.resolve(),
    onCommit: (listener) => watch.onCommit(listener),
    rows,
    unbounded: async (work) => {
      const single = new pg.Pool({ connectionString: url, max: 1, types, connectionTimeoutMillis: acquireTimeoutMs });
      single.on('error', lost);
      single.on('connect', (client) => client.on('error', () => {}));
      const own = new Kysely<Database>({ dialect: faultClassifying(new PostgresDialect({ pool: single })) });
      try {
        return await work(own);
      } finally {
        await own.destroy();
      }
    },
    close: async () => {
      await rows.close();
      await db.destroy();
    },
  };
}

/** A trivial query: the database answers (readiness). */
export const pingDatabase = async (db: Db): Promise<void> => {
  await sql`select 1`.execute(db);
};

interface MigrateOutcome {
  applied: string[];
  error: unknown;
}

/** Applies every pending migration; returns what ran so the CLI can report it. */
export async function migrateToLatest(store: Store): Promise<MigrateOutcome> {
  const migrate = async (db: Db) => {
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(store.dialect) } });
    const { error, results } = await migrator.migrateToLatest();
    const applied = (results ?? []).filter((r: MigrationResult) => r.status === 'Success').map((r) => r.migrationName);
    return { applied, error };
  };
  // A migration may build an index over a large table: longer than a request's statement timeout.
  return store.unbounded(migrate);
}
