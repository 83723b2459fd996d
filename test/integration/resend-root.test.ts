import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Resend } from 'resend';
import { rootResources } from '../../src/intake/http/root-alias.js';
import { apiRoutes } from '../../src/intake/http/routes/index.js';
import { defineRoute } from '../../src/intake/http/route.js';
import { emailState, eventually, routeDomain } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import type { TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { failed, ok } from '../helpers/resend.js';
import type { TestServer } from '../helpers/server.js';

/**
 * Switching from Resend by changing one URL: the SDK's natural base URL is the server itself
 * (Resend's API has no /v1), and Resend's test recipients are simulated on every key.
 */
describe('Resend by one URL: the API at the server root, resend.dev simulated', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let live: string;
  let resend: Resend;

  before(async () => {
    rig = await startDeliveringServer({ delivery: { pollInterval: 20, signingThreads: 0 }, senders: ['root.example'] });
    ({ server, dns, mx } = rig);
    // Were resend.dev really delivered to, the mail would land in this MX.
    routeDomain(dns, 'resend.dev', [{ name: 'mx.resend.dev', preference: 10, a: ['127.0.0.1'] }]);
    live = await server.key();
    resend = new Resend(live, { baseUrl: server.httpUrl });
  });
  after(async () => {
    await rig?.close();
  });

  it('the unchanged SDK works with the server root as its base URL', async () => {
    const sent = ok(
      await resend.emails.send({
        from: 'Shop <shop@root.example>',
        to: 'delivered@resend.dev',
        subject: 'From the root',
        html: '<p>hi</p>',
      }),
      'emails.send',
    );
    const got = ok(await resend.emails.get(sent.id), 'emails.get');
    assert.equal(got.id, sent.id);
    assert.equal(got.subject, 'From the root');
    const domains = ok(await resend.domains.list(), 'domains.list');
    assert.ok(domains.data.some((d) => d.name === 'root.example'));
    ok(await resend.apiKeys.list(), 'apiKeys.list');
    failed(await resend.emails.get('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
  });

  it('answers a root path exactly as its /v1 path, and leaves /v1 and /api/v1 alone', async () => {
    const atRoot = await request(server.httpUrl, 'GET', '/domains', { key: live });
    const atV1 = await request(server.httpUrl, 'GET', '/v1/domains', { key: live });
    assert.equal(atRoot.status, 200, show(atRoot));
    assert.deepEqual(atRoot.body, atV1.body);
    const legacy = await request(server.httpUrl, 'GET', '/api/v1/subscribers', { key: live });
    assert.equal(legacy.status, 200, show(legacy));
    assert.equal(legacy.body.success, true);
    const anonymous = await request(server.httpUrl, 'GET', '/emails');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error.code, 'unauthorized', 'the versioned envelope');
    const unknown = await request(server.httpUrl, 'POST', '/nothing-here', { key: live, body: {} });
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.error.message, /under \/v1 .*also at the root/);
  });

  it('leaves the dashboard, tracking, downloads, unsubscribe, health and metrics where they were', async () => {
    const probes: Array<[string, number]> = [
      ['/healthz', 200],
      ['/readyz', 200],
      ['/metrics', 200],
      ['/t/o/not-a-token', 200],
      ['/t/c/not-a-token', 404],
      ['/u/not-a-token', 400],
      ['/a/not-a-token', 404],
      ['/v1/openapi.json', 200],
    ];
    for (const [path, status] of probes) {
      const res = await request(server.httpUrl, 'GET', path);
      assert.equal(res.status, status, `${path}: ${show(res)}`);
      assert.notEqual(res.body?.error?.code, 'unauthorized', `${path} reached the API`);
    }
    const dashboard = await fetch(`${server.httpUrl}/dashboard`, { redirect: 'manual' });
    assert.equal(dashboard.status, 302);
    assert.match(dashboard.headers.get('location') ?? '', /^\/dashboard\/login/);
  });

  it('refuses, at start, a /v1 resource whose root path is taken', () => {
    assert.ok(rootResources(apiRoutes).has('emails'));
    for (const taken of ['metrics', 'dashboard', 't', 'healthz']) {
      const clash = defineRoute({
        method: 'GET',
        path: `/v1/${taken}`,
        summary: 'x',
        operation: 'api',
        scope: 'emails:read',
        handler: async () => ({}),
      });
      assert.throws(
        () => rootResources([...apiRoutes, clash]),
        new RegExp(`/v1/${taken} cannot also be served at /${taken}`),
      );
    }
  });

  it("a live key to Resend's test recipients opens no connection and reports delivered, bounced, complained", async () => {
    const lookupsBefore = dns.queries.filter((q) => q.includes('resend.dev')).length;
    const send = async (to: string) =>
      ok(await resend.emails.send({ from: 'shop@root.example', to, subject: `to ${to}`, text: 'x' }), `send to ${to}`)
        .id;
    const delivered = await send('delivered+signup@resend.dev');
    const bounced = await send('bounced@resend.dev');
    const complained = await send('complained+x@resend.dev');
    const db = server.runtime.store.db;
    const settled = (id: string) =>
      eventually(async () =>
        (await emailState(db, id)).email.status !== 'queued' && (await emailState(db, id)).email.status !== 'sending'
          ? emailState(db, id)
          : null,
      );

    const d = await settled(delivered);
    assert.equal(d.email.test, 0, 'sent with a live key');
    assert.equal(d.email.status, 'delivered');
    assert.deepEqual(
      d.events.map((e) => e.type),
      ['email.sent', 'email.delivered'],
    );
    assert.equal(d.attempts[0]!.mx_host, 'simulator');

    const b = await settled(bounced);
    assert.equal(b.email.status, 'bounced');
    assert.equal(ok(await resend.emails.get(bounced), 'get').last_event, 'bounced');
    const c = await settled(complained);
    assert.deepEqual(
      c.events.map((e) => e.type),
      ['email.sent', 'email.delivered', 'email.complained'],
    );
    assert.equal(ok(await resend.emails.get(complained), 'get').last_event, 'complained');

    assert.equal(mx.sessions.size, 0, 'no connection reached the MX of resend.dev');
    assert.equal(
      dns.queries.filter((q) => q.includes('resend.dev')).length,
      lookupsBefore,
      'resend.dev was not even looked up',
    );
    const suppressions = await request(server.httpUrl, 'GET', '/suppressions', { key: live });
    assert.equal(suppressions.status, 200, show(suppressions));
    assert.ok(
      !JSON.stringify(suppressions.body).includes('bounced@resend.dev'),
      'a simulated bounce does not suppress the address',
    );
  });
});
