import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrateToLatest, openStore } from '../../src/store/infra/db.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * A database every migration has run on, made once and copied for each test server: the
 * migrations cost 4–6 s per PostgreSQL database and about 1 s per SQLite file on this
 * machine, and the suite starts hundreds of servers. Named by a hash of the migrations'
 * sources, so a changed or added migration makes a new one (several worktrees share one
 * PostgreSQL server, each with its own migrations). The runtime still runs its migrator on
 * the copy: anything newer than the template is applied there as on a real upgrade.
 */
const migrationsDir = repoPath('src/store/infra/migrations');

let hashed: string | undefined;
export function migrationsHash(): string {
  if (hashed) return hashed;
  const hash = createHash('sha256');
  for (const name of readdirSync(migrationsDir).sort())
    hash
      .update(name)
      .update('\0')
      .update(readFileSync(join(migrationsDir, name)))
      .update('\0');
  return (hashed = hash.digest('hex').slice(0, 16));
}

async function migrate(url: string): Promise<void> {
  const store = openStore(url);
  try {
    const { error } = await migrateToLatest(store);
    if (error) throw error instanceof Error ? error : new Error(String(error));
  } finally {
    await store.close();
  }
}

/**
 * Copies the migrated SQLite template to `file` (made first, in the temp directory, when this
 * set of migrations has none). False when no clean copy could be made: the caller's database
 * is then migrated as it opens, as without a template.
 */
export async function copySqliteTemplate(file: string): Promise<boolean> {
  const template = join(tmpdir(), `mailsvc-template-${migrationsHash()}.sqlite`);
  if (!existsSync(template)) {
    // Built aside and renamed into place: a concurrent file never sees half a template.
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-template-'));
    try {
      const built = join(dir, 'template.sqlite');
      await migrate(`sqlite:${built}`);
      // Closed cleanly, the write-ahead log is checkpointed into the file and removed.
      if (existsSync(`${built}-wal`)) return false;
      renameSync(built, template);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  copyFileSync(template, file);
  return true;
}

const templates = new Map<string, Promise<string>>();

/**
 * The name of the migrated template database on `server`, made once per set of migrations.
 * Built under an advisory lock (test processes run side by side) in a database of its own,
 * renamed when complete, and never connected to afterwards: PostgreSQL copies a template only
 * while no session is connected to it.
 */
export function postgresTemplate(server: string): Promise<string> {
  let name = templates.get(server);
  if (!name) {
    name = buildPostgresTemplate(server);
    templates.set(server, name);
    name.catch(() => templates.delete(server));
  }
  return name;
}

async function buildPostgresTemplate(server: string): Promise<string> {
  const name = `mailsvc_template_${migrationsHash()}`;
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock(hashtext($1))', [name]);
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount === 0) {
      const building = `${name}_${process.pid}_${randomBytes(3).toString('hex')}`;
      await client.query(`CREATE DATABASE "${building}"`);
      try {
        const url = new URL(server);
        url.pathname = `/${building}`;
        await migrate(url.toString());
        await client.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      } catch (err) {
        await client.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
        throw err;
      }
    }
    return name;
  } finally {
    await client.end();
  }
}
