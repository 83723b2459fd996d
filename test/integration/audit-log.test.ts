import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * The audit log (issue 32): changes made through the API, the dashboard and the CLI each
 * recorded once with who made them and from where (the client behind the trusted proxy),
 * served newest first with keyset pages to full-access keys, and never a secret in it.
 */

const PASSWORD = 'audit dashboard password';
const CLIENT = '203.0.113.7';

interface Entry {
  id: string;
  action: string;
  actor: { type: string; id: string | null };
  object_id: string | null;
  client_address: string | null;
  detail: Record<string, unknown> | null;
  workspace_id: string | null;
}

describe('the audit log', () => {
  let server: TestServer;
  let admin: string;
  let adminId: string;
  const secrets: string[] = [];
  const api = (method: string, path: string, body?: unknown, key = admin) =>
    request(server.httpUrl, method, path, { key, body, headers: { 'x-forwarded-for': `198.51.100.99, ${CLIENT}` } });
  const log = async (query = '', key = admin) => {
    const res = await request(server.httpUrl, 'GET', `/v1/audit-log${query}`, { key });
    assert.equal(res.status, 200, show(res));
    return res.body as { object: string; has_more: boolean; data: Entry[] };
  };

  before(async () => {
    server = await startTestServer({
      dashboard: { password: PASSWORD },
      http: { trustProxy: ['127.0.0.1'] },
      webhooks: { allowPrivateNetworks: true },
    });
    admin = await server.key();
    adminId = (await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false }))[0]!
      .id;
  });
  after(() => server.close());

  it('records what an API key changed, as that key and from the client address', async () => {
    const key = await api('POST', '/v1/api-keys', { name: 'deploy bot' });
    assert.equal(key.status, 201, show(key));
    secrets.push(key.body.token);
    const hook = await api('POST', '/v1/webhooks', {
      url: 'http://127.0.0.1:9/in?token=hunter2-in-the-url',
      events: ['email.delivered'],
    });
    assert.equal(hook.status, 201, show(hook));
    secrets.push(hook.body.secret, 'hunter2-in-the-url');
    const domain = await api('POST', '/v1/domains', { domain: 'audited.example' });
    assert.equal(domain.status, 201, show(domain));
    assert.equal((await api('POST', '/v1/suppressions', { email: 'gone@audited.example' })).status, 201);
    assert.equal((await api('DELETE', `/v1/domains/${domain.body.id}`)).status, 200);
    assert.equal((await api('DELETE', `/v1/api-keys/${key.body.id}`)).status, 200);

    const { data } = await log();
    const mine = data.filter((e) => e.actor.type === 'api_key');
    assert.deepEqual(
      mine.map((e) => e.action),
      ['api_key.revoked', 'domain.removed', 'suppression.added', 'domain.added', 'webhook.created', 'api_key.created'],
      'newest first, each change once',
    );
    for (const e of mine) {
      assert.equal(e.actor.id, adminId, 'the key that made the change');
      assert.equal(e.client_address, CLIENT, 'the client behind the trusted proxy, not the forged first entry');
      assert.equal(e.workspace_id, server.workspaceId);
    }
    const createdDetail = mine.find((e) => e.action === 'api_key.created')!.detail!;
    assert.deepEqual([createdDetail.name, createdDetail.master], ['deploy bot', false]);
    assert.ok(
      typeof createdDetail.prefix === 'string' &&
        key.body.token.startsWith(createdDetail.prefix) &&
        createdDetail.prefix.length < key.body.token.length / 2,
      'the prefix shown in lists, not the key',
    );
    assert.equal(
      mine.find((e) => e.action === 'webhook.created')!.detail!.url,
      'http://127.0.0.1:9/in',
      'no query, no user info',
    );
    assert.equal(mine.find((e) => e.action === 'suppression.added')!.object_id, 'gone@audited.example');
  });

  it('pages newest first with after/before; filters by action prefix, actor and object; refuses bad filters', async () => {
    const all = (await log('?limit=100')).data;
    const first = await log('?limit=2');
    assert.equal(first.data.length, 2);
    assert.equal(first.has_more, true);
    const second = await log(`?limit=2&after=${first.data[1]!.id}`);
    assert.deepEqual(
      [...first.data, ...second.data].map((e) => e.id),
      all.slice(0, 4).map((e) => e.id),
    );
    const back = await log(`?limit=2&before=${second.data[0]!.id}`);
    assert.deepEqual(
      back.data.map((e) => e.id),
      first.data.map((e) => e.id),
    );
    assert.deepEqual(
      (await log('?action=domain.')).data.map((e) => e.action),
      ['domain.removed', 'domain.added'],
    );
    assert.deepEqual((await log('?action=domain.added')).data.length, 1);
    assert.ok((await log('?actor_type=api_key')).data.every((e) => e.actor.type === 'api_key'));
    assert.deepEqual(
      (await log('?object_id=gone@audited.example')).data.map((e) => e.action),
      ['suppression.added'],
    );
    const bad = await request(server.httpUrl, 'GET', '/v1/audit-log?actor_type=robot', { key: admin });
    assert.equal(bad.status, 400, show(bad));
    assert.match(bad.text, /actor_type/);
  });

  it('is for full-access keys only', async () => {
    const created = await server.runtime.services.credentials.createKey({
      name: 'sender',
      workspaceId: server.workspaceId,
      permission: 'sending_access',
    });
    const refused = await request(server.httpUrl, 'GET', '/v1/audit-log', { key: created.secret });
    assert.equal(refused.status, 403, show(refused));
    assert.equal((await request(server.httpUrl, 'GET', '/v1/audit-log')).status, 401);
  });

  it('records the dashboard session and the CLI as who they are', async () => {
    const dash = new DashboardClient(server.httpUrl);
    const headers = { 'x-forwarded-for': CLIENT };
    assert.equal((await dash.signIn(PASSWORD, headers)).status, 303);
    const page = await dash.get('/dashboard/keys', headers);
    const made = await dash.post('/dashboard/keys', { _csrf: page.csrf!, name: 'from the dashboard' }, headers);
    assert.equal(made.status, 303, made.text.slice(0, 300));
    const secretShown = /\b(re_[A-Za-z0-9_]+)/.exec((await dash.get('/dashboard/keys', headers)).text)?.[1];
    if (secretShown) secrets.push(secretShown);

    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const added = await runCliProcess(
      ['suppressions', 'add', 'cli@audited.example', '--workspace', server.workspaceId],
      env,
    );
    assert.equal(added.code, 0, added.stderr);

    const { data } = await log();
    const fromDashboard = data.find((e) => e.action === 'api_key.created' && e.detail?.name === 'from the dashboard');
    assert.equal(fromDashboard?.actor.type, 'dashboard');
    assert.match(fromDashboard.actor.id!, /^[0-9a-f]{16}$/, 'a prefix of the session hash, never the cookie');
    assert.ok(![...dash.cookies.values()].some((v) => v.includes(fromDashboard.actor.id!)));
    assert.equal(fromDashboard.client_address, CLIENT);
    const fromCli = data.find((e) => e.action === 'suppression.added' && e.object_id === 'cli@audited.example');
    assert.deepEqual([fromCli?.actor.type, fromCli?.actor.id, fromCli?.client_address], ['cli', null, null]);

    const text = await runCliProcess(['audit', '--workspace', server.workspaceId, '--action', 'suppression.'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /cli\s+-\s+suppression\.added\s+cli@audited\.example/);
    assert.match(
      text.stdout,
      new RegExp(
        `api_key:${adminId}\\s+${CLIENT.replaceAll('.', '\\.')}\\s+suppression\\.added\\s+gone@audited\\.example`,
      ),
    );
    const json = await runCliProcess(['audit', '--workspace', server.workspaceId, '--json', '--limit', '1'], env);
    assert.equal(JSON.parse(json.stdout).data.length, 1);
    assert.equal((await runCliProcess(['audit', '--limit', '101'], env)).code, 1, 'a limit over 100 is refused');
  });

  it('holds no secret: no key, webhook secret, password or URL token anywhere in it', async () => {
    const rows = await server.runtime.store.db.selectFrom('audit_log').selectAll().execute();
    assert.ok(rows.length >= 8, `${rows.length} entries`);
    const text = JSON.stringify(rows);
    for (const secret of [...secrets, PASSWORD, admin])
      assert.ok(!text.includes(secret), `a secret (${secret.slice(0, 6)}…) is in the audit log`);
  });

  it('is append-only: nothing outside retention updates or deletes it', () => {
    const root = repoPath('src');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const writers = files.filter((f) =>
      /(updateTable|deleteFrom)\(\s*'audit_log'/.test(readFileSync(join(root, f), 'utf8')),
    );
    assert.deepEqual(writers, ['store/audit-log.ts']);
    assert.doesNotMatch(readFileSync(join(root, 'store/audit-log.ts'), 'utf8'), /updateTable/);
  });
});
