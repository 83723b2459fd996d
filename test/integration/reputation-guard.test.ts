import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { runCliProcess } from '../helpers/cli.js';
import { emailState, eventually } from '../helpers/delivery.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import type { TestServer } from '../helpers/server.js';

/**
 * The reputation guard end to end: a stream of hard bounces from the loopback MX pushes a
 * sending domain's bounce rate over the pause threshold; its marketing mail is then held (what
 * waited in the queue and what is sent afterwards), transactional mail still arrives, and
 * resuming releases every held message to the MX. Nothing is lost.
 */

describe('reputation guard', () => {
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer;
  let key: string;
  let acceptLater = false;

  before(async () => {
    ({ server, mx } = rig = await startDeliveringServer({
      mx: {
        hooks: {
          onRcpt: (address) =>
            address.startsWith('gone')
              ? {
                  code: 550,
                  text: `5.1.1 <${address}>: Recipient address rejected: User unknown in virtual mailbox table`,
                }
              : address.startsWith('later') && !acceptLater
                ? { code: 451, text: '4.3.0 Temporary local problem, try later' }
                : undefined,
        },
      },
      delivery: { pollInterval: 50, signingThreads: 0, retrySchedule: [3600] },
      config: { deliverability: { guard: { interval: 1, minimumSent: 10 } } },
      senders: ['shop.example'],
    }));
    key = await server.key();
  });
  after(() => rig?.close());

  const send = async (to: string, type: 'marketing' | 'transactional') => {
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'News <news@shop.example>', to, subject: `${type} for ${to}`, html: '<p>Hello</p>', type },
    });
    assert.equal(res.status, 200, show(res));
    return res.body.id as string;
  };
  const statusOf = async (id: string) => (await server.runtime.services.emails.get(server.workspaceId, id)).status;
  const reputation = async () => {
    const res = await request(server.httpUrl, 'GET', '/v1/domains/shop.example/reputation', { key });
    assert.equal(res.status, 200, show(res));
    return res.body;
  };
  const received = (address: string) => mx.messages.filter((m) => m.to.includes(address)).length;

  let waiting: string;
  let marketingAfter: string;

  it('pauses marketing mail when hard bounces push the bounce rate over the threshold', async () => {
    // Deferred by the MX: it waits in the queue for an hour.
    waiting = await send('later-1@dest.test', 'marketing');
    await eventually(async () => (await statusOf(waiting)) === 'deferred', 120_000, 'the first attempt deferred');

    const ids = [
      ...Array.from({ length: 12 }, (_, i) => send(`gone-${i}@dest.test`, 'marketing')),
      ...Array.from({ length: 3 }, (_, i) => send(`ok-${i}@dest.test`, 'transactional')),
    ];
    const sent = await Promise.all(ids);
    await eventually(
      async () => (await Promise.all(sent.map(statusOf))).every((s) => s === 'bounced' || s === 'delivered'),
      120_000,
      'every message answered',
    );
    assert.equal(received('ok-0@dest.test'), 1);

    // The guard may pause while the bounces are still coming in (it judges from 10 messages);
    // a later round counts them all, and the domain stays paused.
    const state = await eventually(
      async () => {
        const r = await reputation();
        return r.state === 'paused' && r.sent === 15 ? r : null;
      },
      15_000,
      'the guard to pause the domain, with every answer counted',
    );
    assert.equal(state.hard_bounces, 12);
    assert.equal(state.bounce.rate, 80);
    assert.equal(state.bounce.status, 'failing');
    assert.match(state.reason, /hard-bounce rate [\d.]+% is over 10%/);
    assert.ok(state.paused_at);

    // What waited in the queue is held now, with an event.
    await eventually(async () => (await statusOf(waiting)) === 'held', 120_000, 'the waiting marketing email held');
    const { items, events } = await emailState(server.runtime.store.db, waiting);
    assert.equal(items[0]!.status, 'held');
    assert.ok(
      events.some((e) => e.type === 'email.held'),
      'email.held recorded',
    );
    const updated = await server.runtime.store.db
      .selectFrom('events')
      .select('data')
      .where('type', '=', 'domain.updated')
      .execute();
    assert.ok(
      updated.some((e) => JSON.parse(e.data).reputation?.state === 'paused'),
      'domain.updated with the paused state',
    );
  });

  it('holds new marketing mail of the paused domain and still delivers transactional mail', async () => {
    marketingAfter = await send('fresh-1@dest.test', 'marketing');
    const transactional = await send('fresh-2@dest.test', 'transactional');
    await eventually(async () => (await statusOf(transactional)) === 'delivered', 120_000, 'transactional delivered');
    assert.equal(received('fresh-2@dest.test'), 1);
    await eventually(async () => (await statusOf(marketingAfter)) === 'held', 120_000, 'new marketing mail held');
    const { events } = await emailState(server.runtime.store.db, marketingAfter);
    assert.deepEqual(
      events.map((e) => e.type),
      ['email.held'],
    );
    assert.equal(received('fresh-1@dest.test'), 0, 'the held message never reached the MX');

    const held = await request(server.httpUrl, 'GET', '/v1/emails?status=held', { key });
    assert.equal(held.status, 200, show(held));
    assert.deepEqual(new Set(held.body.data.map((e: { id: string }) => e.id)), new Set([waiting, marketingAfter]));

    const metrics = await fetch(`${server.httpUrl}/metrics`).then((r) => r.text());
    assert.match(metrics, /mailsvc_reputation_paused\{workspace="[^"]+",domain="shop\.example"\} 1/);
    // 12 of 15, or 12 of 16 once the transactional message above is counted.
    assert.match(metrics, /mailsvc_reputation_bounce_rate\{workspace="[^"]+",domain="shop\.example"\} (80|75)\n/);
    assert.match(metrics, /mailsvc_queue_depth\{status="held"\} 2/);

    const listed = await runCliProcess(['reputation', 'list'], {
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: server.dir,
      MAILSVC_LOG_LEVEL: 'warn',
    });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(
      listed.stdout,
      /shop\.example\s+paused\s+(80%\s+0%\s+15|75%\s+0%\s+16)\s+2\s+hard-bounce rate [\d.]+% is over 10%/,
    );
  });

  it('resume releases the held mail to the MX, and the old bounces do not pause it again', async () => {
    acceptLater = true;
    const resumed = await request(server.httpUrl, 'POST', '/v1/domains/shop.example/reputation/resume', { key });
    assert.equal(resumed.status, 200, show(resumed));
    assert.equal(resumed.body.released, 2);
    assert.equal(resumed.body.state, 'sending');
    await eventually(
      async () => (await statusOf(marketingAfter)) === 'delivered' && (await statusOf(waiting)) === 'delivered',
      120_000,
      'released mail delivered',
    );
    assert.equal(received('fresh-1@dest.test'), 1);
    assert.equal(received('later-1@dest.test'), 1);

    // Two more guard rounds: the rates start from the resume, so the domain keeps sending.
    const evaluated = (await reputation()).evaluated_at;
    await eventually(async () => (await reputation()).evaluated_at !== evaluated, 120_000, 'a new evaluation');
    const after = await reputation();
    assert.equal(after.state, 'sending', JSON.stringify(after));
    assert.equal(after.held, 0);
    const again = await send('fresh-3@dest.test', 'marketing');
    await eventually(async () => (await statusOf(again)) === 'delivered', 120_000, 'marketing flows again');
  });

  it('lists every domain and refuses to resume an unknown one', async () => {
    const unknown = await request(server.httpUrl, 'POST', '/v1/domains/nope.example/reputation/resume', { key });
    assert.equal(unknown.status, 404, show(unknown));
    // A NUL byte is no id and no name (PostgreSQL refuses it in a text parameter: it was a 500).
    const nul = await request(server.httpUrl, 'GET', '/v1/domains/zx%00zx/reputation', { key });
    assert.equal(nul.status, 400, show(nul));
    assert.match(nul.body.error.message, /^id: must not contain control characters/);
    const byId = await request(
      server.httpUrl,
      'GET',
      `/v1/domains/${(await reputation()).domain_id.toUpperCase()}/reputation`,
      { key },
    );
    assert.equal(byId.status, 200, show(byId));
    const list = await request(server.httpUrl, 'GET', '/v1/reputation', { key });
    assert.equal(list.status, 200, show(list));
    assert.deepEqual(
      list.body.data.map((d: { domain_name: string }) => d.domain_name),
      ['shop.example'],
    );
  });
});
