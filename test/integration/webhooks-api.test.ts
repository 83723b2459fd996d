import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decryptSecret } from '../../src/shared/crypto.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Registration and management of webhook endpoints, with the production URL policy
 * (HTTPS only, public addresses only). The dispatcher is off: nothing here is delivered, and
 * the public addresses in the test DNS zone are only ever looked up, never connected to.
 */
describe('webhook endpoints API', () => {
  let server: TestServer;
  let dns: TestDns;
  let key: string;
  const PUBLIC_V4 = '93.184.216.34';
  const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946';

  before(async () => {
    dns = await startDnsServer();
    dns.set('hooks.example.test', 'A', [PUBLIC_V4]);
    dns.set('hooks.example.test', 'AAAA', [PUBLIC_V6]);
    dns.set('other.example.test', 'A', [PUBLIC_V4]);
    dns.set('third.example.test', 'A', [PUBLIC_V4]);
    dns.set('legacy.example.test', 'A', [PUBLIC_V4]);
    dns.set('loop.example.test', 'A', ['127.0.0.1']);
    dns.set('internal.example.test', 'A', ['10.0.0.5']);
    dns.set('metadata.example.test', 'A', ['169.254.169.254']);
    dns.set('mixed.example.test', 'A', [PUBLIC_V4]);
    dns.set('mixed.example.test', 'AAAA', ['::1']);
    dns.set('alias.example.test', 'CNAME', ['loop.example.test']);
    server = await startTestServer({ delivery: { dnsServers: [dns.server] }, webhooks: { enabled: false } });
    key = await server.key();
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  const create = (body: unknown) => request(server.httpUrl, 'POST', '/v1/webhooks', { key, body });

  it('POST /v1/webhooks answers 201 with a generated whsec_ secret, shown in full only there', async () => {
    const res = await create({
      url: 'https://hooks.example.test/mailsvc',
      events: ['email.delivered', 'email.bounced'],
      description: 'prod',
    });
    assert.equal(res.status, 201, show(res));
    const w = res.body;
    assert.match(w.id, /^[0-9a-f-]{36}$/);
    assert.equal(w.url, 'https://hooks.example.test/mailsvc');
    assert.deepEqual(w.events, ['email.delivered', 'email.bounced']);
    assert.equal(w.surface, 'v1');
    assert.equal(w.status, 'enabled');
    assert.equal(w.description, 'prod');
    assert.match(w.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.ok(Buffer.from(w.secret.slice(6), 'base64').length >= 24);

    const one = await request(server.httpUrl, 'GET', `/v1/webhooks/${w.id}`, { key });
    assert.equal(one.status, 200, show(one));
    assert.equal(one.body.secret, `whsec_********${w.secret.slice(-4)}`);
    assert.ok(!one.text.includes(w.secret.slice(6, 20)), 'the secret is not shown again');

    const list = await request(server.httpUrl, 'GET', '/v1/webhooks', { key });
    assert.equal(list.status, 200, show(list));
    assert.ok(!list.text.includes(w.secret.slice(6, 20)));
    assert.equal(list.body.webhooks.find((x: { id: string }) => x.id === w.id).secret, one.body.secret);
    assert.deepEqual(Object.keys(list.body.pagination).sort(), ['has_more', 'limit', 'offset', 'total']);

    // At rest the secret is encrypted (it must stay usable for HMAC), not stored in clear.
    const row = await server.runtime.store.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', w.id)
      .executeTakeFirstOrThrow();
    assert.ok(!row.secret_sealed.includes(w.secret.slice(6)));
    assert.equal(decryptSecret(server.runtime.deps.secretKey, row.secret_sealed), w.secret);
  });

  it("POST /api/v1/webhooks takes the caller's whsec_ secret and never echoes it", async () => {
    const secret = 'whsec_legacy-caller-secret-1234567890';
    const res = await request(server.httpUrl, 'POST', '/api/v1/webhooks', {
      key,
      body: { url: 'https://legacy.example.test/hook', events: ['email.delivered'], secret },
    });
    assert.equal(res.status, 201, show(res));
    assert.equal(res.body.success, true);
    assert.equal(res.body.webhook.surface, 'legacy');
    assert.equal(res.body.webhook.url, 'https://legacy.example.test/hook');
    assert.ok(!res.text.includes('legacy-caller-secret'), 'secret not echoed');
    assert.equal(res.body.webhook.secret, 'whsec_********7890');

    for (const bad of [undefined, 'legacy-caller-secret-1234567890', 'whsec_short', 'whsec_has spaces in the secret']) {
      const r = await request(server.httpUrl, 'POST', '/api/v1/webhooks', {
        key,
        body: {
          url: 'https://other.example.test/x',
          events: ['email.delivered'],
          ...(bad === undefined ? {} : { secret: bad }),
        },
      });
      assert.equal(r.status, 400, `${bad}: ${show(r)}`);
      assert.equal(r.body.success, false);
      assert.equal(r.body.code, 'VALIDATION_ERROR');
      assert.match(r.body.error, /^secret:/);
    }
  });

  it('refuses unknown events and missing fields, naming the field', async () => {
    const unknown = await create({
      url: 'https://other.example.test/a',
      events: ['email.delivered', 'email.exploded'],
    });
    assert.equal(unknown.status, 400, show(unknown));
    assert.equal(unknown.body.error.code, 'validation_error');
    assert.match(unknown.body.error.message, /^events\[1\]: unknown event type "email.exploded"/);
    const none = await create({ url: 'https://other.example.test/a', events: [] });
    assert.match(none.body.error.message, /^events:/);
    const noUrl = await create({ events: ['*'] });
    assert.equal(noUrl.body.error.message, 'url: is required');
    const all = await create({ url: 'https://other.example.test/all', events: ['email.sent', '*'] });
    assert.equal(all.status, 201, show(all));
    assert.deepEqual(all.body.events, ['*']);
  });

  it('refuses URLs that are not HTTPS or reach private, loopback or link-local addresses', async () => {
    const refused: Array<[string, RegExp]> = [
      ['http://hooks.example.test/plain', /https/],
      ['ftp://hooks.example.test/', /https/],
      ['https://user:pw@hooks.example.test/', /credentials/],
      ['https://127.0.0.1/hook', /private, loopback or link-local/],
      ['https://[::1]/hook', /private, loopback or link-local/],
      ['https://[::ffff:127.0.0.1]/hook', /private, loopback or link-local/],
      ['https://169.254.169.254/latest/meta-data', /private, loopback or link-local/],
      ['https://localhost/hook', /resolves to a private/],
      [
        'https://loop.example.test/hook',
        /loop\.example\.test resolves to a private, loopback or link-local address \(127\.0\.0\.1\)/,
      ],
      ['https://internal.example.test/hook', /10\.0\.0\.5/],
      ['https://metadata.example.test/hook', /169\.254\.169\.254/],
      ['https://mixed.example.test/hook', /::1/],
      ['https://alias.example.test/hook', /127\.0\.0\.1/],
      ['https://nowhere.example.test/hook', /does not resolve/],
    ];
    for (const [url, reason] of refused) {
      const res = await create({ url, events: ['*'] });
      assert.equal(res.status, 400, `${url}: ${show(res)}`);
      assert.match(res.body.error.message, /^url: /, url);
      assert.match(res.body.error.message, reason, url);
    }
  });

  it('PATCH changes events, URL (re-checked) and status; a re-enabled endpoint starts afresh', async () => {
    const made = await create({ url: 'https://third.example.test/p', events: ['email.sent'] });
    const id = made.body.id;
    const patch = (body: unknown) => request(server.httpUrl, 'PATCH', `/v1/webhooks/${id}`, { key, body });

    const events = await patch({ events: ['email.opened', 'email.clicked'], description: null });
    assert.equal(events.status, 200, show(events));
    assert.deepEqual(events.body.events, ['email.opened', 'email.clicked']);

    const priv = await patch({ url: 'https://internal.example.test/p' });
    assert.equal(priv.status, 400, show(priv));
    assert.match(priv.body.error.message, /^url: /);

    const dup = await patch({ url: 'https://hooks.example.test/mailsvc' });
    assert.equal(dup.status, 409, show(dup));
    assert.equal(dup.body.error.code, 'already_exists');

    const off = await patch({ status: 'disabled' });
    assert.equal(off.body.status, 'disabled');
    assert.equal(off.body.disabled_reason, 'manual');
    assert.ok(off.body.disabled_at);
    const on = await patch({ status: 'enabled' });
    assert.equal(on.body.status, 'enabled');
    assert.equal(on.body.disabled_reason, null);
    assert.equal(on.body.failing_since, null);

    const bad = await patch({ status: 'paused' });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /^status:/);
  });

  it('refuses a second endpoint for the same URL with 409', async () => {
    const res = await create({ url: 'https://hooks.example.test/mailsvc', events: ['*'] });
    assert.equal(res.status, 409, show(res));
    assert.equal(res.body.error.code, 'already_exists');
  });

  it('rotate-secret returns a new secret once and keeps the previous one valid for 24 hours', async () => {
    const made = await create({ url: 'https://other.example.test/rotate', events: ['*'] });
    const before = Date.now();
    const res = await request(server.httpUrl, 'POST', `/v1/webhooks/${made.body.id}/rotate-secret`, { key });
    assert.equal(res.status, 200, show(res));
    assert.match(res.body.secret, /^whsec_/);
    assert.notEqual(res.body.secret, made.body.secret);
    const expires = Date.parse(res.body.previous_secret_expires_at);
    assert.ok(
      expires >= before + 24 * 3600_000 - 1000 && expires <= Date.now() + 24 * 3600_000,
      res.body.previous_secret_expires_at,
    );
    const one = await request(server.httpUrl, 'GET', `/v1/webhooks/${made.body.id}`, { key });
    assert.equal(one.body.secret, `whsec_********${res.body.secret.slice(-4)}`);
  });

  it('DELETE removes the endpoint; unknown ids are 404 on every route', async () => {
    const made = await create({ url: 'https://other.example.test/delete-me', events: ['*'] });
    const del = await request(server.httpUrl, 'DELETE', `/v1/webhooks/${made.body.id}`, { key });
    assert.equal(del.status, 200, show(del));
    assert.deepEqual(del.body, { object: 'webhook', id: made.body.id, deleted: true });
    for (const [method, path] of [
      ['GET', `/v1/webhooks/${made.body.id}`],
      ['DELETE', `/v1/webhooks/${made.body.id}`],
      ['GET', '/v1/webhooks/not-a-uuid/deliveries'],
      ['POST', `/v1/webhooks/${made.body.id}/rotate-secret`],
      ['POST', `/v1/webhooks/${made.body.id}/deliveries/msg_x/replay`],
    ]) {
      const res = await request(server.httpUrl, method!, path!, { key });
      assert.equal(res.status, 404, `${method} ${path}: ${show(res)}`);
      assert.equal(res.body.error.code, 'not_found');
    }
  });

  it('keeps workspaces apart and enforces OAuth scopes', async () => {
    const made = await create({ url: 'https://other.example.test/mine', events: ['*'] });
    const elsewhere = await server.runtime.services.workspaces.create('other');
    const otherKey = await server.key({ workspaceId: elsewhere.id });
    const foreign = await request(server.httpUrl, 'GET', `/v1/webhooks/${made.body.id}`, { key: otherKey });
    assert.equal(foreign.status, 404, show(foreign));
    const theirs = await request(server.httpUrl, 'GET', '/v1/webhooks', { key: otherKey });
    assert.equal(theirs.body.pagination.total, 0);

    const { secret: token } = await server.runtime.services.credentials.createToken({
      name: 'reader',
      workspaceId: server.workspaceId,
      scopes: ['webhooks:read'],
      expiresInSeconds: null,
    });
    const read = await request(server.httpUrl, 'GET', '/v1/webhooks', { key: token });
    assert.equal(read.status, 200, show(read));
    const write = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key: token,
      body: { url: 'https://other.example.test/token', events: ['*'] },
    });
    assert.equal(write.status, 403, show(write));
    assert.match(write.body.error.message, /webhooks:write/);
  });

  it('pages with limit and offset (an out-of-range limit falls back to 20)', async () => {
    const page = await request(server.httpUrl, 'GET', '/v1/webhooks?limit=2&offset=1', { key });
    assert.equal(page.status, 200, show(page));
    assert.equal(page.body.webhooks.length, 2);
    assert.equal(page.body.pagination.limit, 2);
    assert.equal(page.body.pagination.offset, 1);
    assert.equal(page.body.pagination.has_more, page.body.pagination.total > 3);
    const fallback = await request(server.httpUrl, 'GET', '/v1/webhooks?limit=500', { key });
    assert.equal(fallback.body.pagination.limit, 20);
  });
});
