import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCliProcess, serveCli } from '../helpers/cli.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { createTestDatabase, testDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';

describe('mailsvc CLI', () => {
  let dir: string;
  let env: Record<string, string>;
  let database: TestDatabase;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-cli-'));
    database = await testDatabase(join(dir, 'db.sqlite'));
    env = {
      MAILSVC_DATABASE: database.url,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_TLS_PORT: '0',
      MAILSVC_LOG_LEVEL: 'warn',
    };
  });
  after(async () => {
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const cli = async (...args: string[]) => {
    const res = await runCliProcess(args, env);
    return res;
  };

  it('creates a key that works on both surfaces of a running `mailsvc serve`, then revokes it', async () => {
    const created = await cli('keys', 'create', '--name', 'first', '--json');
    assert.equal(created.code, 0, created.stderr);
    const { key, id, prefix } = JSON.parse(created.stdout);
    assert.match(key, /^sk_live_[A-Za-z0-9]{43}$/);
    assert.ok(key.startsWith(prefix));

    const text = await cli('keys', 'create', '--name', 'second', '--test');
    assert.equal(text.code, 0);
    assert.match(text.stdout, /shown once/);
    assert.match(text.stdout, /^ {2}sk_test_[A-Za-z0-9]{43}$/m);

    const list = await cli('keys', 'list');
    assert.match(list.stdout, /PREFIX/);
    assert.match(list.stdout, new RegExp(`${prefix}…\\s+first\\s+live`));
    assert.ok(!list.stdout.includes(key), 'never the key itself');
    assert.ok(statSync(join(dir, 'secret.key')).mode % 0o1000 === 0o600, 'secret key file is private');

    const serve = await serveCli(env);
    const url = serve.url;
    try {
      const a = await request(url, 'GET', '/v1/domains', { key });
      assert.equal(a.status, 200, show(a));
      const b = await request(url, 'GET', '/api/v1/domains', { key });
      assert.equal(b.status, 200, show(b));

      const revoked = await cli('keys', 'revoke', id);
      assert.equal(revoked.code, 0, revoked.stderr);
      const after = await request(url, 'GET', '/api/v1/domains', { key });
      assert.equal(after.status, 401);
      assert.equal(after.body.code, 'UNAUTHORIZED');
    } finally {
      assert.equal(await serve.stop(), 0, 'graceful stop exits 0');
    }
  });

  it('mints OAuth tokens with scopes and refuses unknown scopes in one line', async () => {
    const ok = await cli('tokens', 'create', '--scopes', 'emails:delete,domains:read', '--json');
    assert.equal(ok.code, 1, 'emails:delete is not a scope');
    assert.match(ok.stderr, /^mailsvc: scopes: unknown scope "emails:delete"/);
    const good = await cli(
      'tokens',
      'create',
      '--scopes',
      'emails:write,domains:read',
      '--expires-in',
      '12h',
      '--json',
    );
    assert.equal(good.code, 0, good.stderr);
    const token = JSON.parse(good.stdout);
    assert.match(token.key, /^oat_/);
    assert.deepEqual(token.scopes, ['emails:write', 'domains:read']);
    const hours = (Date.parse(token.expires_at) - Date.parse(token.created_at)) / 3600_000;
    assert.equal(hours, 12);
  });

  it('adds a domain and prints every record to publish', async () => {
    const added = await cli('domains', 'add', 'cli.example', '--json');
    assert.equal(added.code, 0, added.stderr);
    const domain = JSON.parse(added.stdout);
    const dns = await cli('domains', 'dns', 'cli.example');
    assert.equal(dns.code, 0, dns.stderr);
    for (const token of domain.dkim_tokens) {
      assert.match(
        dns.stdout,
        new RegExp(`CNAME\\s+${token}\\._domainkey\\.cli\\.example\\s+${token}\\.dkim\\.localhost`),
      );
      assert.match(dns.stdout, new RegExp(`TXT\\s+${token}\\.dkim\\.localhost\\s+"v=DKIM1; k=rsa; p=`));
    }
    const verify = await cli('domains', 'verify', 'cli.example', '--config', '/dev/null');
    assert.equal(verify.code, 1);
    const dup = await cli('domains', 'add', 'cli.example');
    assert.equal(dup.code, 1);
    assert.equal(dup.stderr, 'mailsvc: Domain cli.example already exists\n');
  });

  it('prints the MX for receiving and manages receiving routes on a verified domain', async () => {
    const dns = await startDnsServer();
    try {
      const withDns = (...args: string[]) =>
        runCliProcess(args, {
          ...env,
          MAILSVC_DELIVERY_DNS_SERVERS: JSON.stringify([dns.server]),
          MAILSVC_DELIVERY_HOSTNAME: 'mx.mailsvc.test',
        });
      assert.equal((await withDns('domains', 'add', 'inbox.example')).code, 0);
      const text = await withDns('domains', 'dns', 'inbox.example');
      assert.match(
        text.stdout,
        /Optional, to receive mail at the domain[^\n]*\n\s+MX\s+inbox\.example\s+10 mx\.mailsvc\.test/,
      );
      // Every record once; SPF is required, as domains check and doctor say.
      assert.match(
        text.stdout,
        /Required, for delivery \(SPF[^\n]*\n\s+TXT\s+bounces\.inbox\.example\s+"v=spf1 a:mx\.mailsvc\.test -all"/,
      );
      assert.doesNotMatch(text.stdout, /not checked/);
      assert.equal(text.stdout.match(/_domainkey\.inbox\.example/g)?.length, 3);
      const records = JSON.parse((await withDns('domains', 'dns', 'inbox.example', '--json')).stdout);
      assert.deepEqual(records.receiving, [{ type: 'MX', name: 'inbox.example', value: '10 mx.mailsvc.test' }]);

      const early = await withDns('routes', 'add', 'help@inbox.example');
      assert.equal(early.code, 1);
      assert.equal(
        early.stderr,
        'mailsvc: inbox.example is not verified: mail is received only for verified domains\n',
      );
      for (const r of records.customer) dns.set(r.name, 'CNAME', [r.value]);
      for (const r of records.dkim_host) dns.set(r.name, 'TXT', [r.value]);
      assert.equal((await withDns('domains', 'verify', 'inbox.example')).code, 0);

      const added = await withDns(
        'routes',
        'add',
        'help@inbox.example',
        '--action',
        'store',
        '--name',
        'Help desk',
        '--json',
      );
      assert.equal(added.code, 0, added.stderr);
      assert.equal(JSON.parse(added.stdout).action, 'store');
      assert.equal((await withDns('routes', 'add', 'reply+*@inbox.example')).code, 0);
      const badAction = await withDns('routes', 'add', 'x@inbox.example', '--action', 'forward');
      assert.equal(badAction.code, 1);
      assert.match(badAction.stderr, /^mailsvc: action: "forward" is not one of webhook, store, reject\n$/);
      assert.equal((await withDns('routes', 'update', 'help@inbox.example', '--action', 'reject')).code, 0);
      const list = await withDns('routes', 'list');
      assert.match(list.stdout, /help@inbox\.example\s+reject\s+Help desk\s+never/);
      assert.match(list.stdout, /reply\+\*@inbox\.example\s+webhook/);
      assert.equal((await withDns('routes', 'remove', 'help@inbox.example')).code, 0);
      const after = JSON.parse((await withDns('routes', 'list', '--json')).stdout);
      assert.deepEqual(
        after.routes.map((r: { address: string }) => r.address),
        ['reply+*@inbox.example'],
      );
      assert.equal((await withDns('routes', 'remove', 'help@inbox.example')).code, 1, 'gone already');
    } finally {
      await dns.close();
    }
  });

  it('manages workspaces and plans', async () => {
    const created = await cli('workspaces', 'create', 'acme', '--json');
    const ws = JSON.parse(created.stdout);
    const plan = await cli(
      'workspaces',
      'set-plan',
      ws.id,
      'enterprise',
      '--transactional',
      '200',
      '--marketing',
      '5000',
    );
    assert.equal(plan.code, 0, plan.stderr);
    const list = await cli('workspaces', 'list', '--json');
    const found = JSON.parse(list.stdout).find((w: { id: string }) => w.id === ws.id);
    assert.equal(found.plan, 'enterprise');
    assert.equal(found.transactional_per_second, 200);
    const bad = await cli('workspaces', 'set-plan', ws.id, 'gold');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^mailsvc: plan: must be one of starter, professional, enterprise\n$/);
  });

  it('creates and lists templates from files, and sets the default sender', async () => {
    const html = join(dir, 'welcome.html');
    writeFileSync(html, '<p>Hello {{name}}</p>');
    const created = await cli(
      'templates',
      'create',
      '--name',
      'welcome',
      '--subject',
      'Hi {{name}}',
      '--html-file',
      html,
      '--json',
    );
    assert.equal(created.code, 0, created.stderr);
    const template = JSON.parse(created.stdout);
    assert.equal(template.html, '<p>Hello {{name}}</p>');
    const aliased = await cli(
      'templates',
      'create',
      '--name',
      'welcome 2',
      '--alias',
      'welcome-email',
      '--subject',
      'Hi',
      '--html-file',
      html,
    );
    assert.equal(aliased.code, 0, aliased.stderr);
    assert.match(aliased.stdout, /^Created template "welcome 2" \(id [0-9a-f-]{36}, alias welcome-email\)\.$/m);
    const taken = await cli(
      'templates',
      'create',
      '--name',
      'again',
      '--alias',
      'welcome-email',
      '--subject',
      'Hi',
      '--html-file',
      html,
    );
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /^mailsvc: alias: another template is named welcome-email\n$/);
    const list = await cli('templates', 'list');
    assert.match(list.stdout, new RegExp(`${template.id}\\s+welcome\\s+Hi \\{\\{name\\}\\}`));
    assert.match(list.stdout, /\s+welcome-email\s+welcome 2\s+Hi\s/);
    const missing = await cli(
      'templates',
      'create',
      '--name',
      'x',
      '--subject',
      's',
      '--html-file',
      join(dir, 'nope.html'),
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^mailsvc: html-file: cannot read .*nope\.html: ENOENT\n$/);
    const ws = JSON.parse((await cli('workspaces', 'list', '--json')).stdout)[0];
    const set = await cli('workspaces', 'set-default-from', ws.id, 'Hello@Acme.Example');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /sends as Hello@acme\.example by default/);
    const bad = await cli('workspaces', 'set-default-from', ws.id, 'not an address');
    assert.equal(bad.code, 1);
  });

  it('fails in one line on a bad configuration, without a stack trace', async () => {
    const res = await runCliProcess(['serve'], { ...env, MAILSVC_HTTP_PORT: 'abc' });
    assert.equal(res.code, 1);
    assert.equal(
      res.stderr,
      'mailsvc: config: http.port must be an integer from 0 to 65535, got "abc" (from MAILSVC_HTTP_PORT)\n',
    );
    const usage = await cli('keys', 'create');
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /required option '--name <name>'/);
  });

  it('applies migrations with `mailsvc migrate`', async () => {
    const fresh = join(dir, 'fresh.sqlite');
    const first = await runCliProcess(['migrate', '--json'], { ...env, MAILSVC_DATABASE: `sqlite:${fresh}` });
    assert.equal(first.code, 0, first.stderr);
    assert.ok(JSON.parse(first.stdout).applied.length >= 1);
    const second = await runCliProcess(['migrate'], { ...env, MAILSVC_DATABASE: `sqlite:${fresh}` });
    assert.match(second.stdout, /up to date/);
  });

  it(
    'applies migrations with `mailsvc migrate` on PostgreSQL',
    { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' },
    async () => {
      const fresh = await createTestDatabase();
      try {
        const first = await runCliProcess(['migrate', '--json'], { ...env, MAILSVC_DATABASE: fresh.url });
        assert.equal(first.code, 0, first.stderr);
        assert.ok(JSON.parse(first.stdout).applied.includes('0010-cluster'));
        const second = await runCliProcess(['migrate'], { ...env, MAILSVC_DATABASE: fresh.url });
        assert.match(second.stdout, /^postgres:\/\/.*: up to date\.$/m);
      } finally {
        await fresh.drop();
      }
    },
  );
});
