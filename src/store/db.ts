import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationResult } from 'kysely';
import { createRequire } from 'node:module';
import type PG from 'pg';
import { migrations } from './migrations/index.js';
import type { Database } from './tables.js';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;

export interface Store {
  db: Db;
  dialect: Dialect;
  /** A readable name of the database, with no password. */
  location: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  poolSize?: number;
}

/** Opens `sqlite:PATH` or `postgres://…`; the only place that knows which engine is underneath. */
export function openStore(url: string, options: OpenOptions = {}): Store {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length));
  if (/^postgres(ql)?:\/\//.test(url)) return openPostgres(url, options.poolSize ?? 10);
  throw new Error(`unsupported database URL: ${url.split(':')[0]}:…`);
}

/** The file of a `sqlite:PATH` URL, absolute; null for PostgreSQL and in-memory databases. */
export function sqliteFile(url: string): string | null {
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length);
  return path === ':memory:' ? null : resolve(path);
}

function openSqlite(path: string): Store {
  const file = path === ':memory:' ? path : resolve(path);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL lets readers (CLI, dashboards) run beside the server; FULL makes every commit
  // durable before we answer 2xx/250, the same bar as Postfix's fsync'd queue file.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return { db, dialect: 'sqlite', location: `sqlite:${file}`, close: () => db.destroy() };
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * kysely prepares every query anew; better-sqlite3 statements are reusable, and preparing
 * costs as much as running a small query. Queries are built from a fixed set of shapes, so a
 * bounded cache keyed by SQL text keeps nearly all of them prepared.
 */
function withStatementCache(sqlite: SQLite.Database) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sqlText: string) {
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
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const location = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
  return { db, dialect: 'postgres', location, close: () => db.destroy() };
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
