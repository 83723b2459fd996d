import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emailState, eventually } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { queueEmail } from '../helpers/mail.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('suppressions API', () => {
  let server: TestServer;
  let dns: TestDns;
  let key: string;
  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({ delivery: { enabled: true, dnsServers: [dns.server], pollInterval: 50 } });
    key = await server.key();
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  const api = (method: string, path: string, body?: unknown, k = key) =>
    request(server.httpUrl, method, path, { key: k, body });

  it('adds addresses and whole domains, lists them with offset pagination, reads and removes one', async () => {
    const address = await api('POST', '/v1/suppressions', {
      email: 'User@Example.COM',
      reason: 'complaint',
      detail: 'asked by phone',
    });
    assert.equal(address.status, 201, show(address));
    assert.equal(address.body.email, 'user@example.com');
    assert.equal(address.body.type, 'address');
    assert.equal(address.body.reason, 'complaint');
    assert.equal(address.body.scope, 'all');
    assert.equal(address.body.detail, 'asked by phone');
    assert.ok(Date.parse(address.body.created_at) > 0);

    const domain = await api('POST', '/v1/suppressions', { domain: 'Blocked.Example' });
    assert.equal(domain.status, 201, show(domain));
    assert.equal(domain.body.email, '@blocked.example');
    assert.equal(domain.body.type, 'domain');
    assert.equal(domain.body.reason, 'manual');

    const unsubscribed = await api('POST', '/v1/suppressions', { email: 'reader@example.com', reason: 'unsubscribe' });
    assert.equal(unsubscribed.body.scope, 'marketing', 'an unsubscribe stops marketing mail only');

    const page = await api('GET', '/v1/suppressions?limit=2&offset=0');
    assert.equal(page.status, 200, show(page));
    assert.equal(page.body.suppressions.length, 2);
    assert.deepEqual(page.body.pagination, { total: 3, limit: 2, offset: 0, has_more: true });
    const rest = await api('GET', '/v1/suppressions?limit=2&offset=2');
    assert.equal(rest.body.suppressions.length, 1);
    assert.equal(rest.body.pagination.has_more, false);
    const fallback = await api('GET', '/v1/suppressions?limit=500');
    assert.equal(fallback.body.pagination.limit, 20, 'a limit outside 1..100 falls back to 20');

    const one = await api('GET', '/v1/suppressions/user%40example.com');
    assert.equal(one.status, 200, show(one));
    assert.equal(one.body.reason, 'complaint');

    const removed = await api('DELETE', '/v1/suppressions/USER@example.com');
    assert.equal(removed.status, 200, show(removed));
    assert.deepEqual(removed.body, {
      object: 'suppression',
      id: 'user@example.com',
      email: 'user@example.com',
      deleted: true,
    });
    const again = await api('DELETE', '/v1/suppressions/user@example.com');
    assert.equal(again.status, 404);
    assert.equal(again.body.error.code, 'not_found');
    const removedDomain = await api('DELETE', '/v1/suppressions/@blocked.example');
    assert.equal(removedDomain.status, 200, show(removedDomain));
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^email: give either email or domain/],
      [{ email: 'a@b.example', domain: 'b.example' }, /^domain: give either/],
      [{ email: 'not an address' }, /^email: /],
      [{ email: 'x@-bad-.example' }, /^email: /],
      [{ domain: 'localhost' }, /^domain: /],
      [{ email: 'a@b.example', reason: 'bogus' }, /^reason: /],
      [{ email: 'a@b.example', scope: 'some' }, /^scope: /],
      [{ email: 'a@b.example\r\nBcc: x@y.example' }, /^email: /],
    ];
    for (const [body, message] of cases) {
      const res = await api('POST', '/v1/suppressions', body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${show(res)}`);
      assert.equal(res.body.error.code, 'validation_error');
      assert.match(res.body.error.message, message, JSON.stringify(body));
    }
  });

  it('needs the suppressions scope for OAuth tokens', async () => {
    const created = await server.runtime.services.credentials.createToken({
      name: 't',
      workspaceId: server.workspaceId,
      scopes: ['suppressions:read'],
      expiresInSeconds: 3600,
    });
    const read = await api('GET', '/v1/suppressions', undefined, created.secret);
    assert.equal(read.status, 200, show(read));
    const write = await api('POST', '/v1/suppressions', { email: 'a@b.example' }, created.secret);
    assert.equal(write.status, 403);
    assert.equal(write.body.error.code, 'forbidden');
  });

  it('stops mail to a suppressed domain without a connection, and only marketing mail for an unsubscribe', async () => {
    await api('POST', '/v1/suppressions', { domain: 'nomail.example' });
    await api('POST', '/v1/suppressions', { email: 'fan@promo.example', reason: 'unsubscribe' });
    const blocked = await queueEmail(server.runtime.store.db, {
      workspaceId: server.workspaceId,
      domain: 'sender.example',
      to: ['anyone@nomail.example'],
    });
    const marketing = await queueEmail(server.runtime.store.db, {
      workspaceId: server.workspaceId,
      domain: 'sender.example',
      to: ['fan@promo.example'],
      type: 'marketing',
      test: true,
    });
    const transactional = await queueEmail(server.runtime.store.db, {
      workspaceId: server.workspaceId,
      domain: 'sender.example',
      to: ['fan@promo.example'],
      test: true,
    });
    server.workers.wake('delivery');
    const status = (id: string) => emailState(server.runtime.store.db, id).then((s) => s.email.status);
    await eventually(async () => (await status(blocked.id)) === 'suppressed', 120_000, 'domain suppression');
    await eventually(async () => (await status(marketing.id)) === 'suppressed', 120_000, 'marketing suppression');
    await eventually(
      async () => (await status(transactional.id)) === 'delivered',
      120_000,
      'transactional delivery (simulated)',
    );
    const state = await emailState(server.runtime.store.db, blocked.id);
    assert.equal(state.events[0]!.type, 'email.suppressed');
    assert.equal(state.events[0]!.data.suppression.email, '@nomail.example');
  });
});
