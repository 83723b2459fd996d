import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('authentication on both surfaces', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const v1 = (key: string | undefined, path = '/v1/domains', extra: Record<string, string> = {}) =>
    request(server.httpUrl, 'GET', path, { ...(key ? { key } : {}), headers: extra });
  const legacy = (key: string | undefined) => request(server.httpUrl, 'GET', '/api/v1/domains', key ? { key } : {});

  it('accepts a live key and a test key on /v1 and /api/v1', async () => {
    for (const key of [await server.key(), await server.key({ test: true })]) {
      const a = await v1(key);
      assert.equal(a.status, 200, show(a));
      assert.deepEqual(a.body, { domains: [], object: 'list', has_more: false, data: [] });
      const b = await legacy(key);
      assert.equal(b.status, 200, show(b));
      assert.deepEqual(b.body, { success: true, domains: [] });
    }
  });

  it('refuses a missing, unknown or malformed key with 401 in each envelope', async () => {
    for (const key of [undefined, 'sk_live_doesnotexist', 'not-a-key', 'sk_live_' + 'x'.repeat(300)]) {
      const a = await v1(key);
      assert.equal(a.status, 401, show(a));
      assert.equal(a.body.error.code, 'unauthorized');
      assert.equal(a.body.error.retryable, false);
      assert.equal(a.body.request_id, a.headers.get('x-request-id'));
      const b = await legacy(key);
      assert.equal(b.status, 401, show(b));
      assert.equal(b.body.success, false);
      assert.equal(b.body.code, 'UNAUTHORIZED');
      assert.equal(typeof b.body.error, 'string');
    }
  });

  it('refuses a revoked key at once', async () => {
    const key = await server.key();
    assert.equal((await v1(key)).status, 200);
    const [listed] = await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false });
    assert.ok(listed && key.startsWith(listed.prefix), 'newest key is listed first with its prefix');
    await server.runtime.services.credentials.revoke(listed.id);
    const a = await v1(key);
    assert.equal(a.status, 401);
    assert.match(a.body.error.message, /revoked/);
    const b = await legacy(key);
    assert.equal(b.status, 401);
    assert.equal(b.body.code, 'UNAUTHORIZED');
  });

  it('accepts an OAuth token on /v1 within its scopes and refuses it on /api/v1', async () => {
    const { secret } = await server.runtime.services.credentials.createToken({
      name: 'app',
      workspaceId: server.workspaceId,
      scopes: ['domains:read'],
      expiresInSeconds: 3600,
    });
    assert.match(secret, /^oat_[A-Za-z0-9]{43}$/);
    const ok = await v1(secret);
    assert.equal(ok.status, 200, show(ok));
    const noScope = await v1(secret, '/v1/api-keys');
    assert.equal(noScope.status, 403, show(noScope));
    assert.equal(noScope.body.error.code, 'forbidden');
    const write = await request(server.httpUrl, 'POST', '/v1/domains', {
      key: secret,
      body: { domain: 'scoped.example' },
    });
    assert.equal(write.status, 403, show(write));
    const refused = await legacy(secret);
    assert.equal(refused.status, 401, show(refused));
    assert.equal(refused.body.code, 'UNAUTHORIZED');
    assert.match(refused.body.error, /\/v1 only/);
  });

  it('refuses an expired token', async () => {
    const { secret, credential } = await server.runtime.services.credentials.createToken({
      name: 'short',
      workspaceId: server.workspaceId,
      scopes: ['full_access'],
      expiresInSeconds: 1,
    });
    assert.ok(credential.expires_at);
    await new Promise((r) => setTimeout(r, 1100));
    const res = await v1(secret);
    assert.equal(res.status, 401);
    assert.match(res.body.error.message, /expired/);
  });

  it('lets a master key act on the workspace it names, by header, query or body', async () => {
    const master = await server.key({ master: true });
    const other = await server.runtime.services.workspaces.create('other');

    const missing = await v1(master);
    assert.equal(missing.status, 400, show(missing));
    assert.equal(missing.body.error.code, 'validation_error');
    assert.match(missing.body.error.message, /workspace_id/);

    const byHeader = await v1(master, '/v1/domains', { 'x-workspace-id': other.id });
    assert.equal(byHeader.status, 200, show(byHeader));

    const created = await request(server.httpUrl, 'POST', '/api/v1/domains', {
      key: master,
      body: { domain: 'master.example', workspace_id: other.id },
    });
    assert.equal(created.status, 201, show(created));
    const byQuery = await v1(master, `/v1/domains?workspace_id=${other.id}`);
    assert.deepEqual(
      byQuery.body.domains.map((d: { domain_name: string }) => d.domain_name),
      ['master.example'],
    );
    const inDefault = await v1(master, `/v1/domains?workspace_id=${server.workspaceId}`);
    assert.ok(!inDefault.body.domains.some((d: { domain_name: string }) => d.domain_name === 'master.example'));

    const unknown = await v1(master, '/v1/domains', { 'x-workspace-id': '01a200af-0000-7000-8000-000000000000' });
    assert.equal(unknown.status, 404, show(unknown));
  });

  it('forbids a workspace key from naming another workspace', async () => {
    const key = await server.key();
    const other = await server.runtime.services.workspaces.create('elsewhere');
    const res = await v1(key, '/v1/domains', { 'x-workspace-id': other.id });
    assert.equal(res.status, 403, show(res));
    assert.equal(res.body.error.code, 'forbidden');
    const legacyRes = await request(server.httpUrl, 'GET', `/api/v1/domains?workspace_id=${other.id}`, { key });
    assert.equal(legacyRes.status, 403);
    assert.equal(legacyRes.body.code, 'FORBIDDEN');
  });

  it('lists API keys on /v1 without the secret, with offset pagination', async () => {
    const key = await server.key();
    const res = await request(server.httpUrl, 'GET', '/v1/api-keys?limit=1', { key });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.api_keys.length, 1);
    assert.equal(res.body.pagination.limit, 1);
    assert.ok(res.body.pagination.total >= 2);
    assert.equal(res.body.pagination.has_more, true);
    assert.ok(!res.text.includes(key), 'the key itself never appears');
    assert.ok(!('secret_hash' in res.body.api_keys[0]));
    const fallback = await request(server.httpUrl, 'GET', '/v1/api-keys?limit=500', { key });
    assert.equal(fallback.body.pagination.limit, 20, 'a limit above 100 falls back to 20');
  });

  it('slows down key guessing from one address with 429', async () => {
    // Its own server, so the address's failure budget is fresh.
    const fresh = await startTestServer();
    try {
      let last = await request(fresh.httpUrl, 'GET', '/v1/domains', { key: 'sk_live_guess0' });
      for (let i = 1; i < 21; i++)
        last = await request(fresh.httpUrl, 'GET', '/v1/domains', { key: `sk_live_guess${i}` });
      assert.equal(last.status, 429, show(last));
      assert.ok(Number(last.headers.get('retry-after')) >= 1);
      const good = await request(fresh.httpUrl, 'GET', '/v1/domains', { key: await fresh.key() });
      assert.equal(good.status, 429, 'a locked-out address is refused before its key is checked');
    } finally {
      await fresh.close();
    }
  });
});
