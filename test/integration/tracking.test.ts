import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { Webhook } from 'standardwebhooks';
import { findEmailContent } from '../../src/store/emails.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { eventually, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

describe('open and click tracking', () => {
  let server: TestServer;
  let dns: TestDns;
  let receiver: WebhookReceiver;
  let key: string;
  let secret: string;

  before(async () => {
    dns = await startDnsServer();
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      delivery: { dnsServers: [dns.server] },
      http: { publicUrl: 'http://mail.shop.example' },
      webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
    });
    await addVerifiedDomain(server, dns, 'shop.example');
    key = await server.key({ test: true });
    const hook = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key,
      body: { url: `${receiver.url}/track`, events: ['email.opened', 'email.clicked'] },
    });
    assert.equal(hook.status, 201, show(hook));
    secret = hook.body.secret;
  });
  after(async () => {
    await server.close();
    await receiver.close();
    await dns.close();
  });

  const html =
    '<html><body><p>Your order: <a href="https://shop.example/orders/7?x=1&amp;y=2">view it</a>, <a href="mailto:help@shop.example">help</a></p></body></html>';

  async function send(path: string, body: Record<string, unknown>) {
    const res = await request(server.httpUrl, 'POST', path, {
      key,
      body: { from: 'hello@shop.example', subject: 'Your order', html, ...body },
    });
    assert.ok(res.status >= 200 && res.status < 300, show(res));
    const id = (res.body.id ?? res.body.data?.[0]?.id) as string;
    const raw = await findEmailContent(server.runtime.store.db, id);
    return { id, html: String((await simpleParser(raw!)).html) };
  }

  /** The tracked links in the message, rewritten to this server (the public URL is a name the test cannot reach). */
  const local = (url: string) => url.replace('http://mail.shop.example', server.httpUrl);
  const get = (url: string, headers: Record<string, string> = {}) => fetch(local(url), { redirect: 'manual', headers });
  const events = async (id: string) =>
    (await request(server.httpUrl, 'GET', `/v1/emails/${id}/events`, { key })).body.events as Array<{
      type: string;
      data: any;
    }>;

  it('defaults: transactional mail is not tracked, marketing mail is; /v1 can ask either way', async () => {
    const transactional = await send('/v1/emails', { to: 'a@dest.test' });
    assert.ok(!transactional.html.includes('/t/'), transactional.html);
    assert.match(transactional.html, /href="https:\/\/shop\.example\/orders\/7\?x=1&(amp;)?y=2"/);
    const marketing = await send('/api/v1/send', { to: 'a@dest.test', type: 'marketing' });
    assert.match(marketing.html, /<img src="http:\/\/mail\.shop\.example\/t\/o\/[\w-]+\.[\w-]+"/);
    assert.match(marketing.html, /href="http:\/\/mail\.shop\.example\/t\/c\/[\w-]+\.[\w-]+"/);
    assert.match(marketing.html, /href="mailto:help@shop\.example"/, 'mailto links stay');
    const optedIn = await send('/v1/emails', { to: 'a@dest.test', track_opens: true });
    assert.match(optedIn.html, /\/t\/o\//);
    assert.ok(!optedIn.html.includes('/t/c/'), 'clicks stay off');
    const optedOut = await send('/v1/emails', {
      to: 'a@dest.test',
      type: 'marketing',
      track_opens: false,
      track_clicks: false,
    });
    assert.ok(!optedOut.html.includes('/t/'));
  });

  it('the pixel records email.opened, first and repeated, with the user agent, and a signed webhook follows', async () => {
    const { id, html: body } = await send('/v1/emails', { to: 'reader@dest.test', track_opens: true });
    const pixel = /<img src="([^"]+)"/.exec(body)![1]!;
    const res = await get(pixel, { 'user-agent': 'Mail/1.0 (Test)' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/gif');
    assert.match(res.headers.get('cache-control')!, /no-store/);
    assert.equal((await res.arrayBuffer()).byteLength, 42);
    await get(pixel, { 'user-agent': 'Mail/1.0 (Test)' });
    const opened = (await events(id)).filter((e) => e.type === 'email.opened');
    assert.equal(opened.length, 2);
    assert.deepEqual(
      opened.map((e) => e.data.first),
      [true, false],
    );
    assert.equal(opened[0]!.data.user_agent, 'Mail/1.0 (Test)');
    assert.deepEqual(opened[0]!.data.to, ['reader@dest.test']);

    // The two opens are dispatched independently, so their webhooks may arrive in either order.
    const hooks = await receiver.waitFor(2, (r) => r.json?.type === 'email.opened' && r.json.data.email_id === id);
    const hook = hooks.find((r) => r.json.data.first === true);
    const payload = new Webhook(secret).verify(hook!.body, hook!.headers as Record<string, string>) as {
      created_at: string;
      data: Record<string, unknown>;
    };
    assert.deepEqual(payload.data, {
      email_id: id,
      to: ['reader@dest.test'],
      subject: 'Your order',
      created_at: payload.created_at,
      from: 'hello@shop.example',
      message_id: opened[0]!.data.message_id,
      broadcast_id: null,
      tags: {},
      variant: null,
      user_agent: 'Mail/1.0 (Test)',
      first: true,
      classification: 'human',
      is_machine: false,
    });
  });

  it('a tracked link redirects to its own URL and records email.clicked; a tampered token is refused', async () => {
    const { id, html: body } = await send('/v1/emails', { to: 'reader@dest.test', track_clicks: true });
    const link = /href="(http:\/\/mail\.shop\.example\/t\/c\/[^"]+)"/.exec(body)![1]!;
    const res = await get(link, { 'user-agent': 'Browser/2' });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('location'), 'https://shop.example/orders/7?x=1&y=2');
    const clicked = await eventually(
      async () => (await events(id)).find((e) => e.type === 'email.clicked'),
      'the click event',
    );
    assert.equal(clicked.data.url, 'https://shop.example/orders/7?x=1&y=2');
    assert.equal(clicked.data.user_agent, 'Browser/2');
    assert.equal(clicked.data.first, true);

    // Re-sign nothing, change the payload: aim the token at another site.
    const token = link.slice(link.lastIndexOf('/') + 1);
    const [payload, mac] = token.split('.');
    const forged = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    forged.u = 'https://evil.example/';
    const forgedLink = link.replace(token, `${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${mac}`);
    for (const bad of [forgedLink, `${link}x`, link.replace('/t/c/', '/t/c/garbage'), `${server.httpUrl}/t/c/`]) {
      const refused = await get(bad);
      assert.equal(refused.status, 404, bad);
      assert.equal(refused.headers.get('location'), null);
    }
    // An open token is not a click token.
    const { html: withPixel } = await send('/v1/emails', { to: 'reader@dest.test', track_opens: true });
    const openToken = /\/t\/o\/([^"]+)"/.exec(withPixel)![1]!;
    assert.equal((await get(`http://mail.shop.example/t/c/${openToken}`)).status, 404);
    // HEAD (link scanners) redirects too, and is recorded as a scanner's click.
    assert.equal((await fetch(local(link), { method: 'HEAD', redirect: 'manual' })).status, 302);
    const clicks = (await events(id)).filter((e) => e.type === 'email.clicked');
    assert.deepEqual(
      clicks.map((e) => [e.data.classification, e.data.classified_by, e.data.first]),
      [
        [clicked.data.classification, clicked.data.classified_by, true],
        ['scanner', 'head_request', false],
      ],
    );
  });
});
