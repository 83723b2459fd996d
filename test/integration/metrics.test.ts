import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import nodemailer from 'nodemailer';
import { eventually, routeDomain } from '../helpers/delivery.js';
import type { TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/** The value of one sample in a Prometheus text exposition (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return 0;
}

const scrape = async (server: TestServer, token?: string) => {
  const res = await request(
    server.httpUrl,
    'GET',
    '/metrics',
    token ? { headers: { authorization: `Bearer ${token}` } } : {},
  );
  assert.equal(res.status, 200, show(res));
  return res.text;
};

describe('GET /metrics while mail flows', () => {
  let dns: TestDns;
  let mx: TestMx;
  let receiver: WebhookReceiver;
  let server: TestServer;
  let rig: DeliveringServer;
  let key: string;
  const SENDER = 'sender.test';

  before(async () => {
    receiver = await startWebhookReceiver();
    ({ server, dns, mx } = rig = await startDeliveringServer({
      delivery: { retrySchedule: [1], pollInterval: 50, signingThreads: 1 },
      config: { webhooks: { allowPrivateNetworks: true, pollInterval: 20 } },
      senders: [SENDER],
    }));
    // Both destinations are the loopback MX (dest.test routed by the fixture); gmail.com only to check its class label.
    routeDomain(dns, 'gmail.com', [{ name: 'mx.gmail.test', preference: 10, a: ['127.0.0.1'] }]);
    key = await server.key();
  });
  after(async () => {
    await rig?.close();
    await receiver?.close();
  });

  it('counts accepted mail, delivery attempts by outcome and class, latency, webhooks and SMTP sessions', async () => {
    const before = await scrape(server);
    assert.equal(sample(before, 'mailsvc_emails_accepted_total', { intake: 'http', type: 'transactional' }), 0);
    const hook = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key,
      body: { url: `${receiver.url}/hook`, events: ['email.delivered'] },
    });
    assert.equal(hook.status, 201, show(hook));

    mx.hooks = {
      onRcpt: (address) => (address.startsWith('gone@') ? { code: 550, text: '5.1.1 No such user' } : undefined),
    };
    for (const to of ['alice@dest.test', 'bob@gmail.com', 'gone@dest.test']) {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: `hello@${SENDER}`, to, subject: 'Hi', text: 'Hello' },
      });
      assert.equal(res.status, 200, show(res));
    }
    const smtp = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.smtp!.starttls,
      requireTLS: true,
      auth: { user: 'apikey', pass: key },
      tls: { rejectUnauthorized: false },
    });
    await smtp.sendMail({ from: `hello@${SENDER}`, to: 'carol@dest.test', subject: 'Over SMTP', text: 'Hello' });
    smtp.close();

    await mx.waitFor(3);
    await receiver.waitFor(3);
    const text = await eventually(
      async () => {
        const t = await scrape(server);
        // Delivery counts its outcomes once their transaction is durable, which can be after the
        // webhook dispatcher has seen the events: wait for both.
        const delivered = ['other', 'gmail'].reduce(
          (n, domain_class) => n + sample(t, 'mailsvc_delivery_attempts_total', { outcome: 'delivered', domain_class }),
          0,
        );
        return sample(t, 'mailsvc_webhook_attempts_total', { outcome: 'succeeded' }) >= 3 &&
          delivered >= 3 &&
          sample(t, 'mailsvc_delivery_attempts_total', { outcome: 'bounced' }) >= 1
          ? t
          : undefined;
      },
      15_000,
      'metrics to show the deliveries',
    );

    assert.equal(sample(text, 'mailsvc_emails_accepted_total', { intake: 'http', type: 'transactional' }), 3);
    assert.equal(sample(text, 'mailsvc_emails_accepted_total', { intake: 'smtp', type: 'transactional' }), 1);
    assert.equal(sample(text, 'mailsvc_delivery_attempts_total', { outcome: 'delivered', domain_class: 'other' }), 2);
    assert.equal(sample(text, 'mailsvc_delivery_attempts_total', { outcome: 'delivered', domain_class: 'gmail' }), 1);
    assert.equal(sample(text, 'mailsvc_delivery_attempts_total', { outcome: 'bounced', domain_class: 'other' }), 1);
    assert.equal(sample(text, 'mailsvc_delivery_latency_seconds_count'), 3);
    assert.ok(sample(text, 'mailsvc_delivery_latency_seconds_sum') > 0);
    assert.equal(sample(text, 'mailsvc_webhook_attempts_total', { outcome: 'succeeded' }), 3);
    assert.equal(sample(text, 'mailsvc_smtp_sessions_total', { listener: 'submission' }), 1);
    // Everything was delivered or bounced: nothing waits.
    assert.equal(sample(text, 'mailsvc_queue_depth', { status: 'queued' }), 0);
    assert.match(text, /^mailsvc_queue_depth\{status="deferred"\} 0$/m);
    // prom-client's default metrics, event loop lag among them.
    assert.match(text, /^mailsvc_nodejs_eventloop_lag_seconds \d/m);
  });

  it('counts campaign messages as they are queued', async () => {
    const before = await scrape(server);
    for (const email of ['sub1@dest.test', 'sub2@gmail.com']) {
      const res = await request(server.httpUrl, 'POST', '/v1/subscribers', { key, body: { email, tags: ['metrics'] } });
      assert.equal(res.status, 201, show(res));
    }
    const sent = await request(server.httpUrl, 'POST', '/api/v1/campaigns/send', {
      key,
      body: {
        subject: 'News',
        from_name: 'Shop',
        from_email: `news@${SENDER}`,
        html: '<p>News</p>',
        tags: ['metrics'],
      },
    });
    assert.equal(sent.status, 202, show(sent));
    await eventually(
      async () => {
        const res = await request(server.httpUrl, 'GET', `/v1/campaigns/${sent.body.campaignId}`, { key });
        return res.body.status === 'sent';
      },
      20_000,
      'the campaign to be sent',
    );
    const after = await scrape(server);
    const delta = (name: string, labels: Record<string, string>) =>
      sample(after, name, labels) - sample(before, name, labels);
    assert.equal(delta('mailsvc_emails_accepted_total', { intake: 'campaign', type: 'marketing' }), 2);
    assert.equal(delta('mailsvc_emails_accepted_total', { intake: 'http', type: 'marketing' }), 0);
    assert.equal(delta('mailsvc_delivery_attempts_total', { outcome: 'delivered', domain_class: 'gmail' }), 1);
    assert.equal(delta('mailsvc_delivery_attempts_total', { outcome: 'delivered', domain_class: 'other' }), 1);
  });
});

describe('GET /metrics access', () => {
  let server: TestServer;
  const TOKEN = 'scrape-secret-0123456789';
  before(async () => {
    server = await startTestServer({ metrics: { token: TOKEN } });
  });
  after(() => server.close());

  it('needs the bearer token when metrics.token is set', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: TOKEN },
    ]) {
      const res = await request(server.httpUrl, 'GET', '/metrics', { headers });
      assert.equal(res.status, 401, show(res));
      assert.equal(res.body.error.code, 'unauthorized');
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
      assert.doesNotMatch(res.text, /mailsvc_/);
    }
    const res = await request(server.httpUrl, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200, show(res));
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  });

  it('shows queued mail in the queue depth gauge (no delivery workers here)', async () => {
    const key = await server.key({ test: true });
    const domain = await request(server.httpUrl, 'POST', '/v1/domains', { key, body: { domain: 'queued.test' } });
    assert.equal(domain.status, 201, show(domain));
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'a@queued.test', to: ['x@dest.test', 'y@dest.test'], subject: 'Hi', text: 'Hello' },
    });
    assert.equal(res.status, 200, show(res));
    assert.equal(sample(await scrape(server, TOKEN), 'mailsvc_queue_depth', { status: 'queued' }), 2);
  });

  it('counts rate-limit rejections', async () => {
    // Failed authentications from one address are limited (20 a minute): the 21st is refused.
    let limited = 0;
    for (let i = 0; i < 22; i++) {
      const res = await request(server.httpUrl, 'GET', '/v1/domains', { key: 'sk_live_not-a-key' });
      if (res.status === 429) limited++;
    }
    assert.ok(limited >= 1);
    assert.equal(
      sample(await scrape(server, TOKEN), 'mailsvc_rate_limited_total', { surface: 'http', operation: 'auth.failure' }),
      limited,
    );
  });
});

describe('metrics.enabled: false', () => {
  it('does not serve /metrics', async () => {
    const server = await startTestServer({ metrics: { enabled: false } });
    try {
      const res = await request(server.httpUrl, 'GET', '/metrics');
      assert.equal(res.status, 404, show(res));
    } finally {
      await server.close();
    }
  });
});
