import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, openAsBlob, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Resend } from 'resend';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { serveCli, type Served } from '../helpers/cli.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';
import { ok } from '../helpers/resend.js';

/**
 * Contact imports are jobs of the worker kernel: two `mailsvc serve` processes on one
 * PostgreSQL database, each with its own data directory (the upload is kept in the database,
 * not beside the node that took it). kill -9 of the node running a large import mid-way: the
 * other takes it over once its lease runs out and finishes it from the last committed batch,
 * every row there exactly once.
 */
describe('a contact import taken over by another node', { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' }, () => {
  let database: TestDatabase;
  let runtime: Runtime;
  let key: string;
  let workspaceId: string;
  const dirs: string[] = [];
  const nodes: Served[] = [];
  const secretKey = randomBytes(32).toString('base64');

  const envFor = (name: string): Record<string, string> => {
    const dir = mkdtempSync(join(tmpdir(), `mailsvc-import-${name}-`));
    dirs.push(dir);
    return {
      MAILSVC_DATABASE: database.url,
      MAILSVC_SECRET_KEY: secretKey,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_LOG_LEVEL: 'warn',
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
      MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
      MAILSVC_DELIVERABILITY_CHECK_INTERVAL: '0',
      MAILSVC_DELIVERY_ENABLED: 'false',
    };
  };

  before(async () => {
    database = await createTestDatabase();
    runtime = await openRuntime(loadConfig({ env: envFor('setup') }), { logger: createLogger('silent') });
    workspaceId = (await runtime.services.workspaces.ensureDefault()).id;
    key = (await runtime.services.credentials.createKey({ name: 'imports', workspaceId })).secret;
  });
  after(async () => {
    for (const node of nodes) await node.kill();
    await runtime?.close();
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const importRow = (id: string) => runtime.store.db.selectFrom('contact_imports').select(['status', 'lease_owner', 'cursor_row', 'total']).where('id', '=', id).executeTakeFirstOrThrow();

  it('kill -9 of the node running a large import: the other finishes it, every row once', { timeout: 300_000 }, async () => {
    const rows = 20_000;
    const file = join(dirs[0]!, 'contacts.csv');
    const out = createWriteStream(file);
    out.write('email,first_name\n');
    for (let i = 0; i < rows; i++) {
      if (!out.write(`node${i}@import.test,N${i}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
    }
    await new Promise<void>((r) => out.end(() => r()));

    const a = await serveCli(envFor('a'));
    const b = await serveCli(envFor('b'));
    nodes.push(a, b);
    const id = ok(await new Resend(key, { baseUrl: a.url }).contacts.imports.create({ file: await openAsBlob(file, { type: 'text/csv' }) }), 'create').id;

    // Whichever node claimed it (the one it was uploaded to is woken first; the other polls): its owner id carries its pid.
    let row = await importRow(id);
    for (;;) {
      row = await importRow(id);
      assert.notEqual(row.status, 'completed', 'the import finished before the kill: make the file larger');
      if (row.lease_owner && Number(row.total) >= 2000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const [running, survivor] = row.lease_owner.split(':')[1] === String(a.child.pid) ? [a, b] : [b, a];
    assert.equal(row.lease_owner.split(':')[1], String(running.child.pid));
    await running.kill();
    const atKill = await importRow(id);
    assert.equal(atKill.status, 'in_progress');
    assert.ok(Number(atKill.cursor_row) < rows);

    const resend = new Resend(key, { baseUrl: survivor.url });
    const deadline = Date.now() + 240_000;
    let done: { status: string; counts: { total: number; created: number; updated: number; skipped: number; failed: number } };
    for (;;) {
      done = ok(await resend.contacts.imports.get(id), 'get');
      if (done.status === 'completed' || done.status === 'failed') break;
      assert.ok(Date.now() < deadline, `still ${done.status}: ${JSON.stringify(done.counts)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(done.status, 'completed');
    // Resumed after the dead node's last committed batch: nothing read twice, nothing missed.
    assert.deepEqual(done.counts, { total: rows, created: rows, updated: 0, skipped: 0, failed: 0 });
    const finished = await importRow(id);
    assert.equal(finished.lease_owner, null);
    assert.equal(finished.status, 'completed');
    const n = await runtime.store.db
      .selectFrom('subscribers')
      .where('workspace_id', '=', workspaceId)
      .where('email_key', 'like', 'node%@import.test')
      .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.count<string>('email_key').distinct().as('distinct')])
      .executeTakeFirstOrThrow();
    assert.equal(Number(n.n), rows, 'one subscriber per row');
    assert.equal(Number(n.distinct), rows);
    assert.equal((await runtime.services.subscribers.get(workspaceId, `node${rows - 1}@import.test`)).first_name, `N${rows - 1}`);
    // The file is gone from the database once the import is done.
    const chunks = await runtime.store.db.selectFrom('contact_import_files').select((eb) => eb.fn.countAll<string>().as('n')).where('import_id', '=', id).executeTakeFirstOrThrow();
    assert.equal(Number(chunks.n), 0);
    assert.ok(survivor.alive());
  });
});
