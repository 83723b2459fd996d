import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { recordEvent } from '../../src/events/record-event.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { eventually, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The SSRF guard's DNS cases, under the production policy (no private networks), with every
 * name answered by a real DNS server on loopback that the server reaches only through
 * `delivery.dnsServers`: a name that resolves to loopback, a CNAME chain ending on a private
 * address, an IPv6 loopback answer, and an answer that changes between the registration
 * check and the connection (DNS rebinding).
 */
describe('webhook and attachment URLs resolve through delivery.dnsServers and the policy holds for every DNS answer', () => {
  let dns: TestDns;
  let server: TestServer;
  let receiver: WebhookReceiver;
  let key: string;

  before(async () => {
    dns = await startDnsServer();
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], enabled: false },
      webhooks: { allowPrivateNetworks: false, pollInterval: 20 },
      attachments: { allowPrivateNetworks: false },
    });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'acme.example');
    dns.set('loopback.hooks.test', 'A', ['127.0.0.1']);
    dns.set('start.chain.test', 'CNAME', ['middle.chain.test']);
    dns.set('middle.chain.test', 'CNAME', ['end.chain.test']);
    dns.set('end.chain.test', 'A', ['10.20.30.40']);
    dns.set('six.hooks.test', 'AAAA', ['::1']);
  });
  after(async () => {
    await server.close();
    await receiver.close();
    await dns.close();
  });

  const port = () => new URL(receiver.url).port;
  const registerHook = (url: string) =>
    request(server.httpUrl, 'POST', '/v1/webhooks', { key, body: { url, events: ['*'] } });
  const sendWithUrl = (url: string) =>
    request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: {
        from: 'a@acme.example',
        to: 'b@example.org',
        subject: 'Invoice',
        html: '<p>attached</p>',
        attachments: [{ filename: 'a.pdf', url, contentType: 'application/pdf' }],
      },
    });

  const cases: Array<[string, string, RegExp]> = [
    [
      'a name that resolves to 127.0.0.1',
      'loopback.hooks.test',
      /loopback\.hooks\.test resolves to a private, loopback or link-local address \(127\.0\.0\.1\)/,
    ],
    [
      'a CNAME chain that ends on a private address',
      'start.chain.test',
      /start\.chain\.test resolves to a private, loopback or link-local address \(10\.20\.30\.40\)/,
    ],
    ['a name whose only address is the IPv6 loopback', 'six.hooks.test', /six\.hooks\.test resolves to .*\(::1\)/],
  ];

  for (const [what, host, message] of cases) {
    it(`webhook registration refuses ${what}`, async () => {
      const before = dns.queries.length;
      const res = await registerHook(`https://${host}:${port()}/hook`);
      assert.equal(res.status, 400, show(res));
      assert.equal(res.body.error.code, 'validation_error');
      assert.match(res.body.error.message, /^url: /);
      assert.match(res.body.error.message, message);
      assert.ok(
        dns.queries.slice(before).some((q) => q.endsWith(` ${host}`)),
        'asked our DNS server',
      );
    });

    it(`an attachment URL naming ${what} is refused before any connection`, async () => {
      const connections = receiver.connections();
      const res = await sendWithUrl(`https://${host}:${port()}/a.pdf`);
      assert.equal(res.status, 400, show(res));
      assert.match(res.body.error.message, /^attachments\[0\]\.url: /);
      assert.match(res.body.error.message, message);
      assert.equal(receiver.connections(), connections, 'no connection was opened');
    });
  }

  it('a name that resolves to a public address when registered and to loopback when delivered is refused at the connection', async () => {
    // Only looked up at registration, never connected to.
    dns.set('rebind.hooks.test', 'A', ['8.8.4.4']);
    const res = await registerHook(`https://rebind.hooks.test:${port()}/hook`);
    assert.equal(res.status, 201, show(res));
    dns.set('rebind.hooks.test', 'A', ['127.0.0.1']);
    await server.runtime.store.db.transaction().execute((trx) =>
      recordEvent(trx, {
        workspaceId: server.workspaceId,
        type: 'email.delivered',
        emailId: null,
        data: { email_id: 'e1', to: 'b@example.org', subject: 'Hi' },
        at: Date.now(),
      }),
    );
    const attempt = await eventually(async () => {
      const list = await request(server.httpUrl, 'GET', `/v1/webhooks/${res.body.id}/deliveries`, { key });
      return list.body.deliveries[0]?.attempts[0];
    }, 'the attempt to be recorded');
    assert.equal(attempt.status_code, null);
    assert.match(
      attempt.error,
      /^refused: rebind\.hooks\.test resolves to a private, loopback or link-local address \(127\.0\.0\.1\)/,
    );
    assert.equal(receiver.connections(), 0, 'nothing was sent to the loopback address');
    assert.equal(receiver.received.length, 0);
  });
});
