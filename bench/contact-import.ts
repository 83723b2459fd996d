// `npm run bench -- contact-import`: a CSV of BENCH_IMPORT_ROWS contacts (default 50,000)
// imported through the API (POST /contacts/imports, the Resend SDK's call) into a built server on
// its defaults, on SQLite and, with BENCH_POSTGRES (a server URL), PostgreSQL; prints rows per
// second and the server's CPU per 1,000 rows (every thread, from /proc). BENCH_SERVER_NODE_ARGS
// adds options to the server (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
import { openAsBlob } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Resend } from 'resend';
import { benchEnv, cli, cpuSeconds, fmt, median, serve, statementsOf } from './lib.js';

interface ImportRun {
  database: string;
  rowsPerSecond: number;
  cpuMsPer1000: number;
  statementsPer1000: number;
}

async function importOnce(database: 'sqlite' | 'postgres', rows: number): Promise<ImportRun> {
  const env = benchEnv({ MAILSVC_DELIVERY_ENABLED: 'false' });
  if (database === 'postgres') env.MAILSVC_DATABASE = await freshPostgres(process.env.BENCH_POSTGRES!);
  const file = join(env.MAILSVC_DATA_DIR!, 'contacts.csv');
  const lines = ['email,first_name,last_name,plan'];
  for (let i = 0; i < rows; i++) lines.push(`person${i}@import.test,First${i},Last${i},plan-${i % 7}`);
  await writeFile(file, `${lines.join('\n')}\n`);
  const { key } = JSON.parse(await cli(['keys', 'create', '--name', 'bench', '--json'], env)) as { key: string };
  const server = await serve(env);
  try {
    const resend = new Resend(key, { baseUrl: server.url });
    const before = cpuSeconds(server.process.pid!) ?? 0;
    const statementsBefore = await statementsOf(server.url);
    const started = performance.now();
    const created = await resend.contacts.imports.create({
      file: await openAsBlob(file, { type: 'text/csv' }),
      columnMap: { properties: { plan: { column: 'plan' } } },
    });
    if (created.error) throw new Error(created.error.message);
    const id = (created.data as { id: string }).id;
    for (let i = 0; i < 36_000; i++) {
      const got = (await resend.contacts.imports.get(id)) as { data: { status: string } | null };
      if (got.data?.status === 'completed') break;
      if (got.data?.status === 'failed') throw new Error('import failed');
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = (cpuSeconds(server.process.pid!) ?? 0) - before;
    const statements = (await statementsOf(server.url)) - statementsBefore;
    return {
      database,
      rowsPerSecond: rows / seconds,
      cpuMsPer1000: (cpu * 1000 * 1000) / rows,
      statementsPer1000: (statements * 1000) / rows,
    };
  } finally {
    await server.stop();
  }
}

async function freshPostgres(serverUrl: string): Promise<string> {
  const pg = (await import('pg')).default;
  const name = `mailsvc_bench_${process.pid}_${Date.now()}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  await client.query(`CREATE DATABASE "${name}"`);
  await client.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function contactImport(options: { rows: number; runs: number }): Promise<void> {
  const databases: Array<'sqlite' | 'postgres'> = process.env.BENCH_POSTGRES ? ['sqlite', 'postgres'] : ['sqlite'];
  const results: ImportRun[] = [];
  for (let run = 0; run < options.runs; run++)
    for (const database of databases) results.push(await importOnce(database, options.rows));
  console.log(`contact import, ${options.rows} rows, medians of ${options.runs}`);
  for (const database of databases) {
    const mine = results.filter((r) => r.database === database);
    console.log(
      `  ${database.padEnd(8)} ${fmt(median(mine.map((r) => r.rowsPerSecond)))} rows/s, ` +
        `server CPU ${median(mine.map((r) => r.cpuMsPer1000)).toFixed(0)} ms and ` +
        `${median(mine.map((r) => r.statementsPer1000)).toFixed(0)} statements per 1,000 rows`,
    );
  }
}
