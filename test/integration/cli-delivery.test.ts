import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { runCli } from '../../src/cli/program.js';
import { runCliProcess, type CliResult } from '../helpers/cli.js';
import { queueEmail } from '../helpers/mail.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';

describe('CLI: suppressions and queue', () => {
  let dir: string;
  let env: Record<string, string>;
  let runtime: Runtime;
  let workspaceId: string;
  let database: TestDatabase;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-cli-delivery-'));
    database = await testDatabase(join(dir, 'db.sqlite'));
    env = {
      MAILSVC_DATABASE: database.url,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_LOG_LEVEL: 'warn',
      MAILSVC_DELIVERY_HOSTNAME: 'mta.example.net',
    };
    runtime = await openRuntime(loadConfig({ env }), { logger: createLogger('silent') });
    workspaceId = (await runtime.services.workspaces.ensureDefault()).id;
  });
  after(async () => {
    await runtime.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  /** The real CLI program in this process (a spawned process per command is slow on a busy machine). */
  const cli = async (...args: string[]): Promise<CliResult> => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), env });
    return { code, stdout, stderr };
  };

  it('adds, lists, imports and removes suppressions', async () => {
    // Once as its own process, exactly as an operator runs it.
    const added = await runCliProcess(
      ['suppressions', 'add', 'Someone@Example.com', '--reason', 'complaint', '--json'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    assert.equal(JSON.parse(added.stdout).email, 'someone@example.com');
    const domain = await cli('suppressions', 'add', '@blocked.example');
    assert.equal(domain.code, 0, domain.stderr);
    assert.match(domain.stdout, /Suppressed @blocked\.example \(manual, scope all\)/);

    const file = join(dir, 'list.csv');
    writeFileSync(
      file,
      [
        'email,name',
        'a@import.example,Ann',
        '"b@import.example",Bob',
        'someone@example.com',
        'not an address',
        '',
        '# comment',
        '@spam.example',
      ].join('\n'),
    );
    const imported = await cli('suppressions', 'import', file, '--json');
    assert.equal(imported.code, 0, imported.stderr);
    const result = JSON.parse(imported.stdout);
    assert.equal(result.added, 3);
    assert.equal(result.alreadyListed, 1);
    assert.deepEqual(
      result.invalid.map((i: { line: number }) => i.line),
      [5],
    );
    // Not a terminal: progress comes as plain lines on stderr, never mixed into the JSON on stdout.
    assert.match(imported.stderr, /^suppressions import: 4 of 4 entries \(100%\), [\d,]+\/s, done in \d+s$/m);
    assert.doesNotMatch(imported.stderr, /\r/);

    const list = await cli('suppressions', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^EMAIL\s+REASON\s+SCOPE/m);
    for (const e of [
      'someone@example.com',
      '@blocked.example',
      'a@import.example',
      'b@import.example',
      '@spam.example',
    ])
      assert.ok(list.stdout.includes(e), e);

    const removed = await cli('suppressions', 'remove', 'someone@example.com');
    assert.equal(removed.code, 0, removed.stderr);
    const again = await cli('suppressions', 'remove', 'someone@example.com');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^mailsvc: Suppression someone@example\.com not found\n$/);
    const bad = await cli('suppressions', 'add', 'x@y.example', '--reason', 'whim');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^mailsvc: reason: "whim" is not one of/);
  });

  it('lists the queue, retries deferred rows now and cancels waiting ones', async () => {
    const first = await queueEmail(runtime.store.db, {
      workspaceId,
      domain: 'sender.example',
      to: ['one@dest.example', 'two@dest.example'],
    });
    const second = await queueEmail(runtime.store.db, {
      workspaceId,
      domain: 'sender.example',
      to: ['three@dest.example'],
    });
    const later = Date.now() + 3600_000;
    await runtime.store.db
      .updateTable('queue_items')
      .set({ status: 'deferred', attempts: 1, next_attempt_at: later, last_code: 451, last_response: '451 try later' })
      .where('email_id', '=', second.id)
      .execute();

    const list = await cli('queue', 'list', '--json');
    assert.equal(list.code, 0, list.stderr);
    const listed = JSON.parse(list.stdout);
    assert.equal(listed.total, 3);
    assert.deepEqual(listed.items.map((i: { recipient: string }) => i.recipient).sort(), [
      'one@dest.example',
      'three@dest.example',
      'two@dest.example',
    ]);
    // Why each row waits: its turn under the destination's limit, or its retry.
    const due = listed.items.find((i: { recipient: string }) => i.recipient === 'one@dest.example');
    assert.match(
      due.waiting,
      /^due: waiting its turn, 2 due for dest\.example takes 10 at once and 1,200\/min \(delivery\.defaultDomainLimit\)$/,
    );
    const deferredOnly = JSON.parse((await cli('queue', 'list', '--status', 'deferred', '--json')).stdout);
    assert.equal(deferredOnly.total, 1);
    assert.equal(deferredOnly.items[0].last_code, 451);
    assert.match(deferredOnly.items[0].waiting, /^retry at .+ after: 451 try later$/);
    const table = await cli('queue', 'list');
    assert.match(table.stdout, /WHY IT WAITS/);
    const badStatus = await cli('queue', 'list', '--status', 'lost');
    assert.equal(badStatus.code, 1);
    assert.match(badStatus.stderr, /^mailsvc: status: "lost" is not one of/);

    const retried = await cli('queue', 'retry', '--all', '--json');
    assert.equal(retried.code, 0, retried.stderr);
    assert.equal(JSON.parse(retried.stdout).retried, 1);
    const row = await runtime.store.db
      .selectFrom('queue_items')
      .selectAll()
      .where('email_id', '=', second.id)
      .executeTakeFirstOrThrow();
    assert.ok(row.next_attempt_at <= Date.now(), 'due now');
    assert.equal(row.status, 'deferred');

    const cancelled = await cli('queue', 'cancel', first.id, '--json');
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal(JSON.parse(cancelled.stdout).cancelled, 2, 'both recipients of the email');
    const email = await runtime.store.db
      .selectFrom('emails')
      .select('status')
      .where('id', '=', first.id)
      .executeTakeFirstOrThrow();
    assert.equal(email.status, 'cancelled');
    const twice = await cli('queue', 'cancel', first.id, '--json');
    assert.equal(JSON.parse(twice.stdout).cancelled, 0, 'finished rows are left alone');
    assert.equal(twice.code, 1, 'nothing was cancelled');
    assert.match(twice.stderr, /^mailsvc: nothing was cancelled/m);
    const finished = await cli('queue', 'retry', first.id);
    assert.equal(finished.code, 1, 'nothing was retried');
    assert.match(finished.stderr, /^mailsvc: nothing was retried: the rows named are delivered, bounced, cancelled/m);
    const none = await cli('queue', 'retry');
    assert.equal(none.code, 1);
    assert.match(none.stderr, /^mailsvc: ids: /);
    // An id that names nothing: one line saying so, and a failure exit, for retry and cancel.
    for (const verb of ['retry', 'cancel']) {
      const unknown = await cli('queue', verb, '00000000-0000-7000-8000-000000000000', second.id);
      assert.equal(unknown.code, 1, `${verb}: ${unknown.stdout}`);
      assert.equal(unknown.stderr, 'mailsvc: Queue item or email 00000000-0000-7000-8000-000000000000 not found\n');
      assert.equal(unknown.stdout, '');
    }
  });

  it('prints the recommended Return-Path records with the domain DNS', async () => {
    await runtime.services.domains.add(workspaceId, { domain: 'bounce-dns.example' });
    const dns = await cli('domains', 'dns', 'bounce-dns.example', '--json');
    assert.equal(dns.code, 0, dns.stderr);
    assert.deepEqual(JSON.parse(dns.stdout).return_path, [
      { type: 'MX', name: 'bounces.bounce-dns.example', value: '10 mta.example.net' },
      { type: 'TXT', name: 'bounces.bounce-dns.example', value: 'v=spf1 a:mta.example.net -all' },
    ]);
  });
});
