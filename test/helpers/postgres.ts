import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { copySqliteTemplate, postgresTemplate } from './migrated-template.js';

/**
 * PostgreSQL for tests: MAILSVC_TEST_POSTGRES names a server (e.g.
 * postgres://postgres@127.0.0.1:5432/test); each caller gets a database of its own so tests
 * stay independent, and drops it afterwards.
 */
export const testPostgresUrl = (): string | undefined => process.env.MAILSVC_TEST_POSTGRES || undefined;

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

async function admin(server: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

const PREFIX = 'mailsvc_t_';
let swept: Promise<void> | undefined;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Drops the databases of test processes that are gone (killed, crashed before close()): the
 * name carries the pid of the process that made it.
 */
async function sweepOrphans(server: string): Promise<void> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      `select datname from pg_database where datname like '${PREFIX}%'`,
    );
    for (const { datname } of rows) {
      const pid = Number(datname.slice(PREFIX.length).split('_')[0]);
      if (Number.isInteger(pid) && pid > 0 && !alive(pid))
        await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}

/**
 * Creates `mailsvc_t_<pid>_<random>` on the server named by MAILSVC_TEST_POSTGRES (or
 * `server`): empty, or with `migrated` a copy of the migrated template (what a server would
 * make of the empty one as it starts, seconds sooner).
 */
export async function createTestDatabase(
  server = testPostgresUrl(),
  options: { migrated?: boolean } = {},
): Promise<TestDatabase> {
  if (!server) throw new Error('MAILSVC_TEST_POSTGRES is not set');
  await (swept ??= sweepOrphans(server));
  const name = `${PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = options.migrated ? await postgresTemplate(server) : undefined;
  await admin(server, template ? `CREATE DATABASE "${name}" TEMPLATE "${template}"` : `CREATE DATABASE "${name}"`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    // FORCE: a pool left open by a failed test must not keep the database alive.
    drop: () => (dropped ??= admin(server, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
}

/**
 * The database a test that configures mailsvc itself (CLI, child processes) should use: a
 * fresh PostgreSQL database when MAILSVC_TEST_POSTGRES is set, else `file` in SQLite. Empty,
 * or with `migrated` already migrated (see createTestDatabase).
 */
export async function testDatabase(file: string, options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  if (testPostgresUrl()) return createTestDatabase(undefined, options);
  if (options.migrated) await copySqliteTemplate(file);
  return { url: `sqlite:${file}`, drop: async () => {} };
}
