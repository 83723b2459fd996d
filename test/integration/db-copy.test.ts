import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli/program.js';
import { listApplicationTables } from '../../src/store/infra/copy.js';
import { openStore } from '../../src/store/infra/db.js';
import { queueEmail } from '../helpers/mail.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';
import { startTestServer } from '../helpers/server.js';

async function cli(args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    env: { MAILSVC_LOG_LEVEL: 'silent' },
  });
  return { code, stdout, stderr };
}

async function counts(url: string): Promise<Record<string, number>> {
  const store = openStore(url);
  try {
    const out: Record<string, number> = {};
    const tables = await listApplicationTables(store);
    for (const table of tables.sort()) {
      const row = await store.db
        .selectFrom(table as 'emails')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .executeTakeFirstOrThrow();
      out[table] = Number(row.n);
    }
    return out;
  } finally {
    await store.close();
  }
}

/** `mailsvc db copy` from a populated SQLite installation into a fresh database (PostgreSQL when MAILSVC_TEST_POSTGRES is set). */
describe('mailsvc db copy', () => {
  let dir: string;
  let from: string;
  let target: TestDatabase;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-copy-'));
    from = `sqlite:${join(dir, 'source.sqlite')}`;
    const server = await startTestServer({ database: from });
    try {
      const ws = server.workspaceId;
      await server.key();
      await server.runtime.services.domains.add(ws, { domain: 'copy.test' });
      // More queue rows than one batch (500), so the copy pages.
      for (let i = 0; i < 300; i++)
        await queueEmail(server.runtime.store.db, {
          workspaceId: ws,
          domain: 'copy.test',
          to: [`a${i}@example.test`, `b${i}@example.test`],
          text: `message ${i}\n`,
        });
      await server.runtime.services.suppressions.add(ws, { email: 'gone@example.test' });
      // Events of one millisecond with ids in the reverse of the order they were written in.
      for (const id of ['evt_copy_c', 'evt_copy_b', 'evt_copy_a']) {
        await server.runtime.store.db
          .insertInto('events')
          .values({ id, workspace_id: ws, type: 'domain.updated', email_id: null, data: '{}', created_at: 1000 })
          .execute();
      }
    } finally {
      await server.close().catch(() => {});
    }
    target = testPostgresUrl()
      ? await createTestDatabase()
      : { url: `sqlite:${join(dir, 'target.sqlite')}`, drop: async () => {} };
  });
  after(async () => {
    await target?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies every table, and the counts match the source', async () => {
    const result = await cli(['db', 'copy', '--from', from, '--to', target.url]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /^db copy queue_items: 500 of 600 rows \(83%\)/m, 'progress after the first batch');
    assert.match(result.stderr, /^db copy queue_items: 600 of 600 rows \(100%\), [\d,]+\/s, done in \d+s$/m);
    assert.match(result.stdout, /counts match/);
    assert.doesNotMatch(result.stdout, /db copy/, 'progress stays off stdout');
    const order = [...result.stderr.matchAll(/^db copy (\w+): [\d,]+ of [\d,]+ rows .*done in/gm)].map((m) => m[1]!);
    for (const [parent, child] of <Array<[string, string]>>[
      ['workspaces', 'emails'],
      ['emails', 'queue_items'],
      ['queue_items', 'delivery_attempts'],
      ['events', 'webhook_deliveries'],
      ['subscribers', 'audience_members'],
    ]) {
      assert.ok(
        order.indexOf(parent) >= 0 && order.indexOf(parent) < order.indexOf(child),
        `${parent} is copied before ${child}`,
      );
    }
    const source = await counts(from);
    assert.equal(source.emails, 300);
    assert.equal(source.queue_items, 600);
    assert.equal(source.suppressions, 1);
    assert.deepEqual(await counts(target.url), source);

    // The copied content reads back the same (blobs, numbers).
    const a = openStore(from);
    const b = openStore(target.url);
    try {
      const one = await a.db
        .selectFrom('email_contents')
        .selectAll()
        .orderBy('email_id')
        .limit(1)
        .executeTakeFirstOrThrow();
      const two = await b.db
        .selectFrom('email_contents')
        .selectAll()
        .where('email_id', '=', one.email_id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(Buffer.from(two.raw), Buffer.from(one.raw));
      const email = await a.db.selectFrom('emails').selectAll().orderBy('id').limit(1).executeTakeFirstOrThrow();
      assert.deepEqual(
        await b.db.selectFrom('emails').selectAll().where('id', '=', email.id).executeTakeFirstOrThrow(),
        email,
      );
      // Events keep their order, and the next event written comes after every copied one.
      const seqs = async (db: typeof a.db) =>
        (await db.selectFrom('events').select(['id', 'seq']).orderBy('seq').execute()).map((e) => e.id);
      assert.deepEqual(
        (await seqs(a.db)).filter((id) => id.startsWith('evt_copy_')),
        ['evt_copy_c', 'evt_copy_b', 'evt_copy_a'],
      );
      assert.deepEqual(await seqs(b.db), await seqs(a.db));
      const last = await b.db
        .selectFrom('events')
        .select((eb) => eb.fn.max('seq').as('m'))
        .executeTakeFirstOrThrow();
      const workspace = await b.db.selectFrom('workspaces').select('id').executeTakeFirstOrThrow();
      await b.db
        .insertInto('events')
        .values({
          id: 'evt_after_copy',
          workspace_id: workspace.id,
          type: 'domain.updated',
          email_id: null,
          data: '{}',
          created_at: 0,
        })
        .execute();
      const added = await b.db
        .selectFrom('events')
        .select('seq')
        .where('id', '=', 'evt_after_copy')
        .executeTakeFirstOrThrow();
      assert.ok(
        added.seq > Number(last.m ?? 0),
        `a new event (seq ${added.seq}) follows the copied ones (up to ${last.m})`,
      );
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses a target that already has rows', async () => {
    const result = await cli(['db', 'copy', '--from', from, '--to', target.url]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^mailsvc: target is not empty: table workspaces has rows/m);
  });

  it('refuses a source that is not SQLite', async () => {
    const result = await cli(['db', 'copy', '--from', 'postgres://127.0.0.1/x', '--to', target.url]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--from sqlite:PATH/);
  });
});
