import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { EventType } from '../../src/events/event-types.js';
import { recordEvent } from '../../src/events/record-event.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  eventually,
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';

/** Seconds-scale schedules so retries happen within a test; private networks allowed for loopback receivers. */
const WEBHOOKS = {
  allowPrivateNetworks: true,
  schedule: [1],
  legacySchedule: [0, 0, 0],
  pollInterval: 20,
  perEndpointConcurrency: 2,
};

const deliveredData = (n = 1) => ({
  email_id: `0190a4b2-0000-7000-8000-00000000000${n}`,
  message_id: `<m${n}@mail.example.com>`,
  to: 'bob@example.org',
  subject: `Hello ${n}`,
  campaign_id: null,
  subscriber_id: 'sub_1',
  tags: ['welcome'],
  metadata: { order: 42 },
  timestamp: '2025-01-02T03:04:05.000Z',
  smtp: { code: 250, response: '250 2.0.0 OK', mx_host: 'mx.example.org' },
});

interface Tenant {
  key: string;
  workspaceId: string;
  emit(type: EventType, data?: Record<string, unknown>): Promise<string>;
}

/** A workspace of its own per test, so endpoints of one test never receive another's events. */
async function tenant(server: TestServer, name: string): Promise<Tenant> {
  const ws = await server.runtime.services.workspaces.create(name);
  const key = await server.key({ workspaceId: ws.id });
  return {
    key,
    workspaceId: ws.id,
    async emit(type, data = deliveredData()) {
      // As the delivery engine does: the event is recorded in the transaction of its state change.
      const row = await server.runtime.store.db.transaction().execute((trx) =>
        recordEvent(trx, {
          workspaceId: ws.id,
          type,
          emailId: (data.email_id as string) ?? null,
          data,
          at: Date.now(),
        }),
      );
      return row.id;
    },
  };
}

const verifyStandard = (secret: string, r: ReceivedWebhook) =>
  new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
    id: string;
    type: string;
    created_at: string;
    data: Record<string, unknown>;
  };

describe('webhook delivery', () => {
  let server: TestServer;
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ webhooks: WEBHOOKS });
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  async function register(t: Tenant, path: string, events: string[] = ['*']) {
    const res = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key: t.key,
      body: { url: `${receiver.url}${path}`, events },
    });
    assert.equal(res.status, 201, show(res));
    return res.body as { id: string; secret: string };
  }

  const deliveries = async (t: Tenant, endpointId: string, query = '') => {
    const res = await request(server.httpUrl, 'GET', `/v1/webhooks/${endpointId}/deliveries${query}`, { key: t.key });
    assert.equal(res.status, 200, show(res));
    return res.body as { deliveries: any[]; pagination: { total: number } };
  };
  const delivery = async (t: Tenant, endpointId: string, id: string) => {
    const res = await request(server.httpUrl, 'GET', `/v1/webhooks/${endpointId}/deliveries/${id}`, { key: t.key });
    assert.equal(res.status, 200, show(res));
    return res.body;
  };
  const endpoint = async (t: Tenant, id: string) =>
    (await request(server.httpUrl, 'GET', `/v1/webhooks/${id}`, { key: t.key })).body;

  it('versioned: a signed Standard Webhooks POST that the reference library verifies', async () => {
    const t = await tenant(server, 'v1-sign');
    const hook = await register(t, '/v1-sign');
    const eventId = await t.emit('email.delivered');
    const [got] = await receiver.waitFor(1, (r) => r.path === '/v1-sign');
    const payload = verifyStandard(hook.secret, got!);
    assert.equal(payload.id, eventId);
    assert.equal(payload.type, 'email.delivered');
    assert.deepEqual(payload.data, {
      email_id: deliveredData().email_id,
      to: ['bob@example.org'],
      subject: 'Hello 1',
      created_at: payload.created_at,
      from: null,
      message_id: '<m1@mail.example.com>',
      broadcast_id: null,
      tags: { welcome: '' },
      variant: null,
    });
    assert.equal(got!.headers['content-type'], 'application/json');
    assert.ok(Math.abs(Number(got!.headers['webhook-timestamp']) - Date.now() / 1000) < 300);

    const listed = await eventually(async () => {
      const d = await deliveries(t, hook.id);
      return d.deliveries[0]?.status === 'succeeded' ? d : undefined;
    }, 'the delivery to be recorded');
    const item = listed.deliveries[0];
    assert.equal(item.id, got!.headers['webhook-id'], 'webhook-id is the delivery id');
    assert.equal(item.event_id, eventId);
    assert.equal(item.event_type, 'email.delivered');
    assert.equal(item.status_code, 200);
    assert.equal(item.response, 'ok');
    assert.equal(item.attempt_count, 1);
    assert.equal(item.next_attempt_at, null);
    assert.equal(typeof item.duration_ms, 'number');
  });

  it('legacy: X-Service-Signature is the hex HMAC of "<timestamp>.<body>", with the legacy data fields', async () => {
    const t = await tenant(server, 'legacy-sign');
    const secret = 'whsec_legacy-test-secret-0123456789';
    const res = await request(server.httpUrl, 'POST', '/api/v1/webhooks', {
      key: t.key,
      body: { url: `${receiver.url}/legacy-sign`, events: ['email.delivered'], secret },
    });
    assert.equal(res.status, 201, show(res));
    const eventId = await t.emit('email.delivered');
    const [got] = await receiver.waitFor(1, (r) => r.path === '/legacy-sign');
    const timestamp = got!.headers['x-service-timestamp'] as string;
    assert.match(timestamp, /^\d{10}$/);
    const expected = createHmac('sha256', secret).update(`${timestamp}.${got!.body}`).digest('hex');
    assert.equal(got!.headers['x-service-signature'], expected);
    assert.equal(got!.headers['x-service-event'], 'email.delivered');
    assert.equal(got!.headers['webhook-signature'], undefined);
    assert.equal(got!.json.id, eventId);
    assert.deepEqual(got!.json.data, {
      email_id: deliveredData().email_id,
      message_id: '<m1@mail.example.com>',
      recipient: 'bob@example.org',
      campaign_id: null,
      timestamp: '2025-01-02T03:04:05.000Z',
      metadata: { order: 42, subscriber_id: 'sub_1', tags: ['welcome'] },
    });
  });

  it('delivers only the subscribed event types', async () => {
    const t = await tenant(server, 'filter');
    const bounces = await register(t, '/filter-bounces', ['email.bounced']);
    const all = await register(t, '/filter-all', ['*']);
    await t.emit('email.delivered');
    await t.emit('email.bounced', {
      ...deliveredData(),
      bounce: { type: 'hard', category: 'mailbox', code: 550, message: 'no such user' },
    });
    const [bounced] = await receiver.waitFor(1, (r) => r.path === '/filter-bounces');
    await receiver.waitFor(2, (r) => r.path === '/filter-all');
    assert.equal(bounced!.json.type, 'email.bounced');
    assert.deepEqual(bounced!.json.data.bounce, {
      type: 'hard',
      category: 'mailbox',
      code: 550,
      message: 'no such user',
    });
    assert.equal((await deliveries(t, bounces.id)).pagination.total, 1);
    assert.equal((await deliveries(t, all.id)).pagination.total, 2);
  });

  it('retries a failed delivery on schedule, with the same webhook-id, and records every attempt', async () => {
    const t = await tenant(server, 'retry');
    const hook = await register(t, '/retry');
    receiver.reply((r, i) =>
      r.path === '/retry' && receiver.received.filter((x) => x.path === '/retry').length === 1
        ? { status: 500, body: 'boom' }
        : { status: 200, body: `ok ${i}` },
    );
    await t.emit('email.delivered');
    const [first, second] = await receiver.waitFor(2, (r) => r.path === '/retry');
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    assert.equal(first!.headers['webhook-id'], second!.headers['webhook-id']);
    assert.equal(verifyStandard(hook.secret, first!).id, verifyStandard(hook.secret, second!).id);
    assert.ok(second!.receivedAt - first!.receivedAt >= 900, 'the retry waited for the schedule');

    const id = first!.headers['webhook-id'] as string;
    const d = await eventually(async () => {
      const x = await delivery(t, hook.id, id);
      return x.status === 'succeeded' ? x : undefined;
    }, 'the retry to be recorded');
    assert.equal(d.attempt_count, 2);
    assert.equal(d.attempts.length, 2);
    const [a1, a2] = d.attempts;
    assert.deepEqual([a1.attempt, a1.outcome, a1.status_code, a1.response], [1, 'failed', 500, 'boom']);
    assert.ok(
      Date.parse(a1.next_attempt_at) - Date.parse(a1.started_at) >= 1000,
      'the failed attempt shows when the next is due',
    );
    assert.deepEqual([a2.attempt, a2.outcome, a2.status_code, a2.next_attempt_at], [2, 'succeeded', 200, null]);
    const health = await endpoint(t, hook.id);
    assert.equal(health.failing_since, null, 'a success ends the failure streak');
    assert.ok(health.last_failure_at);
  });

  it('legacy: four attempts (now and three retries), then the delivery fails', async () => {
    const t = await tenant(server, 'legacy-fail');
    await request(server.httpUrl, 'POST', '/api/v1/webhooks', {
      key: t.key,
      body: {
        url: `${receiver.url}/legacy-fail`,
        events: ['email.delivered'],
        secret: 'whsec_legacy-fail-secret-0123456789',
      },
    });
    const list = await request(server.httpUrl, 'GET', '/v1/webhooks', { key: t.key });
    const hookId = list.body.webhooks[0].id;
    receiver.reply((r) => (r.path === '/legacy-fail' ? { status: 503, body: 'down' } : { status: 200 }));
    await t.emit('email.delivered');
    const d = await eventually(async () => {
      const x = (await deliveries(t, hookId)).deliveries[0];
      return x?.status === 'failed' ? x : undefined;
    }, 'the legacy delivery to fail');
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    assert.equal(d.attempt_count, 4);
    assert.equal(d.status_code, 503);
    assert.equal(d.next_attempt_at, null);
    assert.equal(receiver.received.filter((r) => r.path === '/legacy-fail').length, 4);
    assert.equal((await endpoint(t, hookId)).status, 'enabled', 'legacy endpoints are not disabled');
  });

  it('after a rotation, deliveries carry signatures by the new and the previous secret', async () => {
    const t = await tenant(server, 'rotate');
    const hook = await register(t, '/rotate');
    const rotated = await request(server.httpUrl, 'POST', `/v1/webhooks/${hook.id}/rotate-secret`, { key: t.key });
    assert.equal(rotated.status, 200, show(rotated));
    await t.emit('email.delivered');
    const [got] = await receiver.waitFor(1, (r) => r.path === '/rotate');
    assert.equal((got!.headers['webhook-signature'] as string).split(' ').length, 2);
    assert.equal(verifyStandard(rotated.body.secret, got!).type, 'email.delivered');
    assert.equal(verifyStandard(hook.secret, got!).type, 'email.delivered');
    assert.throws(
      () => verifyStandard(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, got!),
      /No matching signature/,
    );

    // Legacy: the current secret in X-Service-Signature, the previous in X-Service-Signature-Previous.
    const secret = 'whsec_legacy-rotate-secret-0123456789';
    await request(server.httpUrl, 'POST', '/api/v1/webhooks', {
      key: t.key,
      body: { url: `${receiver.url}/rotate-legacy`, events: ['email.sent'], secret },
    });
    const legacyId = (await request(server.httpUrl, 'GET', '/v1/webhooks', { key: t.key })).body.webhooks.find(
      (w: { surface: string }) => w.surface === 'legacy',
    ).id;
    const newSecret = (await request(server.httpUrl, 'POST', `/v1/webhooks/${legacyId}/rotate-secret`, { key: t.key }))
      .body.secret;
    await t.emit('email.sent');
    const [legacy] = await receiver.waitFor(1, (r) => r.path === '/rotate-legacy');
    const ts = legacy!.headers['x-service-timestamp'];
    assert.equal(
      legacy!.headers['x-service-signature'],
      createHmac('sha256', newSecret).update(`${ts}.${legacy!.body}`).digest('hex'),
    );
    assert.equal(
      legacy!.headers['x-service-signature-previous'],
      createHmac('sha256', secret).update(`${ts}.${legacy!.body}`).digest('hex'),
    );
  });

  it('410 Gone disables a versioned endpoint at once; it then gets no more deliveries', async () => {
    const t = await tenant(server, 'gone');
    const hook = await register(t, '/gone');
    receiver.reply((r) => (r.path === '/gone' ? { status: 410, body: 'gone' } : { status: 200, body: 'ok' }));
    await t.emit('email.delivered');
    const e = await eventually(async () => {
      const x = await endpoint(t, hook.id);
      return x.status === 'disabled' ? x : undefined;
    }, 'the endpoint to be disabled');
    assert.equal(e.disabled_reason, 'gone');
    assert.ok(e.disabled_at);
    const [d] = (await deliveries(t, hook.id)).deliveries;
    assert.equal(d.status, 'failed');
    assert.equal(d.status_code, 410);
    assert.equal(d.attempt_count, 1);
    await t.emit('email.delivered');
    assert.equal((await deliveries(t, hook.id)).pagination.total, 1, 'no delivery is queued for a disabled endpoint');
    const replay = await request(server.httpUrl, 'POST', `/v1/webhooks/${hook.id}/deliveries/${d.id}/replay`, {
      key: t.key,
    });
    assert.equal(replay.status, 409, show(replay));
    assert.equal(receiver.received.filter((r) => r.path === '/gone').length, 1);
  });

  it('replay sends a delivery again with the same webhook-id', async () => {
    const t = await tenant(server, 'replay');
    const hook = await register(t, '/replay');
    await t.emit('email.delivered');
    const [first] = await receiver.waitFor(1, (r) => r.path === '/replay');
    const id = first!.headers['webhook-id'] as string;
    await eventually(
      async () => ((await delivery(t, hook.id, id)).status === 'succeeded' ? true : undefined),
      'the first delivery',
    );
    const replay = await request(server.httpUrl, 'POST', `/v1/webhooks/${hook.id}/deliveries/${id}/replay`, {
      key: t.key,
    });
    assert.equal(replay.status, 202, show(replay));
    assert.equal(replay.body.status, 'pending');
    const [, again] = await receiver.waitFor(2, (r) => r.path === '/replay');
    assert.equal(again!.headers['webhook-id'], id);
    assert.equal(verifyStandard(hook.secret, again!).id, first!.json.id);
    const d = await eventually(async () => {
      const x = await delivery(t, hook.id, id);
      return x.status === 'succeeded' && x.attempts.length === 2 ? x : undefined;
    }, 'the replay to be recorded');
    assert.deepEqual(
      d.attempts.map((a: { attempt: number }) => a.attempt),
      [1, 2],
    );
  });

  it('a slow endpoint holds only its own lane (perEndpointConcurrency), never the others', async () => {
    const t = await tenant(server, 'lanes');
    await register(t, '/slow');
    await register(t, '/fast');
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    receiver.reply((r) => (r.path === '/slow' ? { status: 200, holdUntil: released } : { status: 200, body: 'ok' }));
    try {
      for (let i = 0; i < 10; i++) await t.emit('email.delivered', deliveredData(i % 10));
      // Every fast delivery arrives while the slow endpoint holds its POSTs open...
      await receiver.waitFor(10, (r) => r.path === '/fast');
      // ...which fill its lane and no more.
      await receiver.waitFor(WEBHOOKS.perEndpointConcurrency, (r) => r.path === '/slow');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(receiver.received.filter((r) => r.path === '/slow').length, WEBHOOKS.perEndpointConcurrency);
      assert.equal(receiver.inFlight(), WEBHOOKS.perEndpointConcurrency);
    } finally {
      release();
    }
    await receiver.waitFor(10, (r) => r.path === '/slow');
    assert.ok(
      receiver.maxInFlight() <= WEBHOOKS.perEndpointConcurrency,
      `at most ${WEBHOOKS.perEndpointConcurrency} in flight to one endpoint`,
    );
    receiver.reply(() => ({ status: 200, body: 'ok' }));
  });
});

describe('webhook delivery across a restart', () => {
  it('a delivery that failed before the restart is retried after it', async () => {
    const receiver = await startWebhookReceiver();
    const first = await startTestServer({ webhooks: WEBHOOKS });
    let second: TestServer | undefined;
    try {
      const t = await tenant(first, 'restart');
      const res = await request(first.httpUrl, 'POST', '/v1/webhooks', {
        key: t.key,
        body: { url: `${receiver.url}/restart`, events: ['*'] },
      });
      assert.equal(res.status, 201, show(res));
      receiver.reply(() => ({ status: 500, body: 'not yet' }));
      await t.emit('email.delivered');
      const [attempt1] = await receiver.waitFor(1);
      const id = attempt1!.headers['webhook-id'] as string;
      await eventually(async () => {
        const d = await first.runtime.store.db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirst();
        return d?.attempt_count === 1 && d.lease_owner === null ? d : undefined;
      }, 'the failed attempt to be recorded');
      await first.stop();

      receiver.reply(() => ({ status: 200, body: 'ok' }));
      second = await startTestServer({ database: first.config.database, dataDir: first.dir, webhooks: WEBHOOKS });
      const after = await receiver.waitFor(2);
      assert.equal(after[1]!.headers['webhook-id'], id);
      assert.equal(verifyStandard(res.body.secret, after[1]!).type, 'email.delivered');
      const d = await eventually(async () => {
        const row = await second!.runtime.store.db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirst();
        return row?.status === 'succeeded' ? row : undefined;
      }, 'the delivery to succeed after the restart');
      assert.equal(d.attempt_count, 2);
    } finally {
      await second?.close();
      rmSync(first.dir, { recursive: true, force: true });
      await receiver.close();
    }
  });
});

describe('webhook delivery under the production URL policy', () => {
  it('refuses at delivery time a host that now resolves to loopback (DNS rebinding), without connecting', async () => {
    const dns = await startDnsServer();
    const receiver = await startWebhookReceiver();
    const port = new URL(receiver.url).port;
    // Public when registered (looked up only: nothing connects to it)...
    dns.set('rebind.example.test', 'A', ['93.184.216.34']);
    const server = await startTestServer({
      delivery: { dnsServers: [dns.server] },
      webhooks: { ...WEBHOOKS, allowPrivateNetworks: false, schedule: [3600] },
    });
    try {
      const t = await tenant(server, 'rebind');
      const res = await request(server.httpUrl, 'POST', '/v1/webhooks', {
        key: t.key,
        body: { url: `https://rebind.example.test:${port}/hook`, events: ['*'] },
      });
      assert.equal(res.status, 201, show(res));
      // ...and loopback by the time an event is delivered.
      dns.set('rebind.example.test', 'A', ['127.0.0.1']);
      await t.emit('email.delivered');
      const d = await eventually(async () => {
        const r = await request(server.httpUrl, 'GET', `/v1/webhooks/${res.body.id}/deliveries`, { key: t.key });
        return r.body.deliveries[0]?.attempt_count === 1 ? r.body.deliveries[0] : undefined;
      }, 'the refused attempt to be recorded');
      assert.equal(d.status, 'pending', 'a refusal is a failed attempt, retried on schedule');
      assert.equal(d.status_code, null);
      assert.match(
        d.error,
        /^refused: rebind\.example\.test resolves to a private, loopback or link-local address \(127\.0\.0\.1\)$/,
      );
      assert.equal(receiver.connections(), 0, 'no connection was opened to the loopback address');
    } finally {
      await server.close();
      await receiver.close();
      await dns.close();
    }
  });
});

describe('webhooks from a real send', () => {
  it('POST /v1/emails with a test key ends in signed email.sent, email.delivered and email.bounced webhooks', async () => {
    const dns = await startDnsServer();
    const receiver = await startWebhookReceiver();
    const server = await startTestServer({ delivery: { dnsServers: [dns.server] }, webhooks: WEBHOOKS });
    try {
      await addVerifiedDomain(server, dns, 'shop.example');
      const key = await server.key({ test: true });
      const v1 = await request(server.httpUrl, 'POST', '/v1/webhooks', {
        key,
        body: { url: `${receiver.url}/e2e-v1`, events: ['email.sent', 'email.delivered', 'email.bounced'] },
      });
      assert.equal(v1.status, 201, show(v1));
      const secret = 'whsec_e2e-legacy-secret-0123456789';
      const legacy = await request(server.httpUrl, 'POST', '/api/v1/webhooks', {
        key,
        body: { url: `${receiver.url}/e2e-legacy`, events: ['email.delivered'], secret },
      });
      assert.equal(legacy.status, 201, show(legacy));

      const sent = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: 'Shop <hello@shop.example>', to: 'someone@dest.test', subject: 'Order 1', html: '<p>Thanks</p>' },
      });
      assert.ok(sent.status === 200 || sent.status === 202, show(sent));
      const emailId = sent.body.id as string;

      const got = await receiver.waitFor(2, (r) => r.path === '/e2e-v1');
      const payloads = got.map((r) => verifyStandard(v1.body.secret, r));
      assert.deepEqual(payloads.map((p) => p.type).sort(), ['email.delivered', 'email.sent']);
      for (const p of payloads) {
        assert.deepEqual(p.data, {
          email_id: emailId,
          to: ['someone@dest.test'],
          subject: 'Order 1',
          created_at: p.created_at,
          from: '"Shop" <hello@shop.example>',
          message_id: `<${emailId}@shop.example>`,
          broadcast_id: null,
          tags: {},
          variant: null,
        });
      }

      const [old] = await receiver.waitFor(1, (r) => r.path === '/e2e-legacy');
      const ts = old!.headers['x-service-timestamp'];
      assert.equal(
        old!.headers['x-service-signature'],
        createHmac('sha256', secret).update(`${ts}.${old!.body}`).digest('hex'),
      );
      assert.equal(old!.json.type, 'email.delivered');
      assert.equal(old!.json.data.email_id, emailId);
      assert.equal(old!.json.data.recipient, 'someone@dest.test');
      assert.match(old!.json.data.message_id, /@shop\.example>$/);
      assert.deepEqual(Object.keys(old!.json.data).sort(), [
        'campaign_id',
        'email_id',
        'message_id',
        'metadata',
        'recipient',
        'timestamp',
      ]);

      // The simulator's bounce address: a hard bounce, reported with its details.
      const bounced = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: 'hello@shop.example', to: 'bounced@simulator.mailsvc.dev', subject: 'Order 2', html: '<p>x</p>' },
      });
      assert.ok(bounced.status === 200 || bounced.status === 202, show(bounced));
      const [bounce] = await receiver.waitFor(1, (r) => r.path === '/e2e-v1' && r.json?.type === 'email.bounced');
      const data = verifyStandard(v1.body.secret, bounce!).data as { email_id: string; bounce: { type: string } };
      assert.equal(data.email_id, bounced.body.id);
      assert.equal(data.bounce.type, 'hard');
    } finally {
      await server.close();
      await receiver.close();
      await dns.close();
    }
  });
});

describe('webhooks without the poll', () => {
  it('posts an event as soon as it is committed: the dispatcher is woken, not polled (poll interval an hour)', async () => {
    const dns = await startDnsServer();
    const receiver = await startWebhookReceiver();
    const server = await startTestServer({
      delivery: { dnsServers: [dns.server] },
      webhooks: { ...WEBHOOKS, pollInterval: 3_600_000 },
    });
    try {
      await addVerifiedDomain(server, dns, 'shop.example');
      const key = await server.key({ test: true });
      const hook = await request(server.httpUrl, 'POST', '/v1/webhooks', {
        key,
        body: { url: `${receiver.url}/now`, events: ['email.sent'] },
      });
      assert.equal(hook.status, 201, show(hook));
      // The dispatcher's first poll ran at its start; from now on only a wake can move it.
      for (let i = 0; i < 3; i++) {
        const before = receiver.received.length;
        const sent = await request(server.httpUrl, 'POST', '/v1/emails', {
          key,
          body: {
            from: 'hello@shop.example',
            to: `someone${i}@dest.test`,
            subject: `Order ${i}`,
            html: '<p>Thanks</p>',
          },
        });
        assert.ok(sent.status === 200 || sent.status === 202, show(sent));
        const [got] = await receiver.waitFor(before + 1, undefined, 10_000);
        assert.ok(got, 'the webhook arrived long before the hour-long poll');
      }
      assert.equal(receiver.received.length, 3);
    } finally {
      await server.close();
      await receiver.close();
      await dns.close();
    }
  });
});
