import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { recordEvent } from '../../src/events/record-event.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { eventually, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const PASSWORD = 'correct horse battery staple';

/** A loopback port nothing listens on: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

describe('webhook attempt history: every attempt of every delivery, in the API and on the dashboard', () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let key: string;

  before(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      webhooks: { allowPrivateNetworks: true, schedule: [1], pollInterval: 20 },
      dashboard: { password: PASSWORD },
    });
    key = await server.key();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  const get = (path: string) => request(server.httpUrl, 'GET', path, { key });
  const register = async (url: string) => {
    const res = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key,
      body: { url, events: ['email.delivered'] },
    });
    assert.equal(res.status, 201, show(res));
    return res.body.id as string;
  };
  const emit = () =>
    server.runtime.store.db.transaction().execute((trx) =>
      recordEvent(trx, {
        workspaceId: server.workspaceId,
        type: 'email.delivered',
        emailId: null,
        data: { email_id: '0190a4b2-0000-7000-8000-000000000001', to: 'bob@example.org', subject: 'Hi' },
        at: Date.now(),
      }),
    );

  it('lists a 500 and the successful retry under the delivery, and serves them at /attempts', async () => {
    let calls = 0;
    receiver.reply(() => (++calls === 1 ? { status: 500, body: 'database is down' } : { status: 200, body: 'thanks' }));
    const hookId = await register(`${receiver.url}/flaky`);
    await emit();
    const delivery = await eventually(async () => {
      const res = await get(`/v1/webhooks/${hookId}/deliveries`);
      assert.equal(res.status, 200, show(res));
      const d = res.body.deliveries[0];
      return d?.status === 'succeeded' ? d : undefined;
    }, 'the retry to succeed');
    assert.equal(delivery.attempt_count, 2);
    assert.equal(delivery.attempts.length, 2, 'the list shows every attempt, not only the last');
    const [first, second] = delivery.attempts;
    assert.deepEqual(
      [first.attempt, first.outcome, first.status_code, first.response, first.error],
      [1, 'failed', 500, 'database is down', null],
    );
    assert.deepEqual(
      [second.attempt, second.outcome, second.status_code, second.response, second.next_attempt_at],
      [2, 'succeeded', 200, 'thanks', null],
    );
    for (const a of delivery.attempts) {
      assert.ok(Number.isInteger(a.duration_ms) && a.duration_ms >= 0, 'duration in ms');
      assert.ok(!Number.isNaN(Date.parse(a.started_at)), 'start time');
    }
    assert.ok(Date.parse(second.started_at) > Date.parse(first.started_at));

    const attempts = await get(`/v1/webhooks/${hookId}/deliveries/${delivery.id}/attempts`);
    assert.equal(attempts.status, 200, show(attempts));
    assert.deepEqual(attempts.body.attempts, delivery.attempts);
    assert.deepEqual(attempts.body.pagination, { total: 2, limit: 20, offset: 0, has_more: false });
    const page = await get(`/v1/webhooks/${hookId}/deliveries/${delivery.id}/attempts?limit=1&offset=1`);
    assert.deepEqual(page.body.attempts, [second]);
    assert.equal(page.body.pagination.has_more, false);
    assert.equal(
      (await get(`/v1/webhooks/${hookId}/deliveries/${delivery.id}/attempts?limit=1`)).body.pagination.has_more,
      true,
    );

    const unknown = await get(`/v1/webhooks/${hookId}/deliveries/msg_nope/attempts`);
    assert.equal(unknown.status, 404, show(unknown));
    assert.equal(unknown.body.error.code, 'not_found');
  });

  it('records the network error when there was no answer, and shows both on the dashboard', async () => {
    const hookId = await register(`http://127.0.0.1:${await closedPort()}/gone`);
    await emit();
    const attempt = await eventually(
      async () => (await get(`/v1/webhooks/${hookId}/deliveries`)).body.deliveries[0]?.attempts[0],
      'the attempt',
    );
    assert.equal(attempt.status_code, null);
    assert.equal(attempt.response, null);
    assert.match(attempt.error, /^ECONNREFUSED: /);
    assert.equal(attempt.outcome, 'failed');

    const dashboard = new DashboardClient(server.httpUrl);
    assert.equal((await dashboard.signIn(PASSWORD)).status, 303);
    const refused = await dashboard.get(`/dashboard/webhooks/${hookId}`);
    assert.equal(refused.status, 200);
    assert.match(refused.text, /ECONNREFUSED: /);
    const flaky = (await get('/v1/webhooks')).body.webhooks.find((w: { url: string }) => w.url.endsWith('/flaky'));
    const page = await dashboard.get(`/dashboard/webhooks/${flaky.id}`);
    assert.match(page.text, /<td>500<\/td>/, 'the failed attempt is on the page');
    assert.match(page.text, /database is down/);
    assert.match(page.text, /<td>200<\/td>/);
    assert.match(page.text, /thanks/);
  });
});
