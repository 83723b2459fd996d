import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { runCliProcess } from '../helpers/cli.js';
import { emailState, eventually, routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { queueEmail } from '../helpers/mail.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { WARMUP_REFRESH_MS } from '../../src/delivery/warmup.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SENDER = 'sender.test';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const deliveryConfig = (dns: TestDns, mx: TestMx, daySeconds: number) => ({
  delivery: {
    enabled: true,
    dnsServers: [dns.server],
    port: mx.port,
    hostname: 'mta.mailsvc.test',
    pollInterval: 50,
    signingThreads: 0,
    workers: 0,
    retrySchedule: [1],
    providerLimits: { google: { concurrency: 4, perMinute: 100_000 } },
    warmup: { start: 50, target: 100_000, daySeconds },
  },
  dkim: { host: 'dkim.mailsvc.test' },
});

const routeGoogle = (dns: TestDns) => {
  routeDomain(dns, 'one.test', [{ name: 'aspmx.l.google.com', preference: 1, a: ['127.0.0.1'] }]);
  routeDomain(dns, 'two.test', [{ name: 'alt1.aspmx.l.google.com', preference: 5, a: ['127.0.0.1'] }]);
};

/** Messages the MX accepted from `address` (after `from`). */
const fromAddress = (mx: TestMx, address: string, from = 0) =>
  mx.messages.slice(from).filter((m) => m.remoteAddress === address).length;

/**
 * IP warm-up with the real delivery engine: an address in warm-up sends at most the day's cap
 * per provider, the rest goes through the pool's warm addresses or waits (never bounced), and
 * the next day's cap lets more go. Warm-up days are a few seconds long here (delivery.warmup.daySeconds).
 */
describe('IP warm-up', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let master: string;

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    server = await startTestServer(deliveryConfig(dns, mx, 6));
    master = await server.key({ master: true });
    await addVerifiedDomain(server, dns, SENDER);
    routeGoogle(dns);
  });
  after(async () => {
    await server?.close();
    await mx?.close();
    await dns?.close();
  });

  const api = (method: string, path: string, body?: unknown) =>
    request(server.httpUrl, method, path, { key: master, body });
  const pool = async (name: string, addresses: string[]) => {
    const res = await api('POST', '/v1/ip-pools', { name, addresses: addresses.map((address) => ({ address })) });
    assert.equal(res.status, 201, show(res));
    return res.body.id as string;
  };
  const queue = async (n: number, poolId: string, type: 'marketing' | 'transactional' = 'marketing') => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const to = `${type[0]}${Math.random().toString(36).slice(2)}@${i % 2 ? 'one' : 'two'}.test`;
      ids.push(
        (
          await queueEmail(server.runtime.store.db, {
            workspaceId: server.workspaceId,
            domain: SENDER,
            to: [to],
            ipPoolId: poolId,
            type,
          })
        ).id,
      );
    }
    server.workers.wake('delivery');
    return ids;
  };
  const states = (ids: string[]) => Promise.all(ids.map((id) => emailState(server.runtime.store.db, id)));

  it('bad warm-up requests get a clear 4xx', async () => {
    await pool('lonely', ['127.0.0.9']);
    const cases: Array<[unknown, number, RegExp]> = [
      [{ address: '127.0.0.99' }, 404, /in any IP pool/],
      [{ address: 'nope' }, 400, /not an IPv4 or IPv6 address/],
      [{ address: '127.0.0.9', schedule: [] }, 400, /1 to 365 daily caps/],
      [{ address: '127.0.0.9', schedule: [0, 10] }, 400, /daily caps/],
      [{ address: '127.0.0.9', schedule: Array.from({ length: 366 }, () => 1) }, 400, /1 to 365/],
    ];
    for (const [body, status, message] of cases) {
      const res = await api('POST', '/v1/ip-pools/warmup', body);
      assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 60)}: ${show(res)}`);
      assert.match(res.body.error?.message ?? res.body.message, message);
    }
    const ok = await api('POST', '/v1/ip-pools/warmup', {
      address: '127.0.0.9',
      schedule: Array.from({ length: 365 }, () => 1),
    });
    assert.equal(ok.status, 200, show(ok));
    const key = await server.key();
    assert.equal(
      (await request(server.httpUrl, 'POST', '/v1/ip-pools/warmup', { key, body: { address: '127.0.0.9' } })).status,
      403,
    );
    assert.equal((await api('DELETE', '/v1/ip-pools/warmup/127.0.0.9')).status, 200);
    assert.equal((await api('DELETE', '/v1/ip-pools/warmup/127.0.0.9')).status, 404);
    const def = await api('POST', '/v1/ip-pools/warmup', { address: '127.0.0.9' });
    assert.deepEqual(
      def.body.schedule.slice(0, 5),
      [50, 100, 200, 400, 800],
      'the default doubles from delivery.warmup.start',
    );
    assert.equal(def.body.schedule.at(-1), 51_200, 'up to the target');
    assert.equal(def.body.day, 1);
    assert.equal(def.body.cap, 50);
  });

  it('a warming address sends its cap for the provider; marketing beyond it goes through the warm address', async () => {
    const id = await pool('mixed', ['127.0.0.2', '127.0.0.3']);
    const started = await api('POST', '/v1/ip-pools/warmup', { address: '127.0.0.2', schedule: [3, 6] });
    assert.equal(started.status, 200, show(started));
    await sleep(WARMUP_REFRESH_MS + 100);
    const base = mx.messages.length;
    const ids = await queue(8, id);
    await eventually(
      async () => (await states(ids)).every((s) => s.email.status === 'delivered'),
      120_000,
      'eight delivered',
    );
    assert.equal(
      fromAddress(mx, '127.0.0.2', base),
      3,
      'the warming address sent exactly its cap to Google (both domains together)',
    );
    assert.equal(fromAddress(mx, '127.0.0.3', base), 5, 'the rest left from the warm address');
    const shown = await api('GET', '/v1/ip-pools/mixed');
    const warming = shown.body.addresses.find((a: { address: string }) => a.address === '127.0.0.2');
    assert.deepEqual(
      [warming.warmup.day, warming.warmup.cap, warming.warmup.sent_today],
      [1, 3, [{ provider: 'google', count: 3 }]],
    );
    assert.equal(shown.body.addresses.find((a: { address: string }) => a.address === '127.0.0.3').warmup, null, 'warm');
    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const listed = await runCliProcess(['ip-pools', 'list'], env);
    assert.match(listed.stdout, /127\.0\.0\.2\s+mta\.mailsvc\.test\s+day 1 of 2: 3\/provider today \(sent google 3\)/);
  });

  it('transactional mail takes the warm addresses first; marketing the warming one', async () => {
    const id = await pool('tx', ['127.0.0.4', '127.0.0.5']);
    await api('POST', '/v1/ip-pools/warmup', { address: '127.0.0.4', schedule: [10, 20] });
    await sleep(WARMUP_REFRESH_MS + 100);
    const base = mx.messages.length;
    const tx = await queue(4, id, 'transactional');
    await eventually(
      async () => (await states(tx)).every((s) => s.email.status === 'delivered'),
      120_000,
      'transactional delivered',
    );
    assert.equal(fromAddress(mx, '127.0.0.5', base), 4, 'all from the warm address');
    const mid = mx.messages.length;
    const marketing = await queue(4, id, 'marketing');
    await eventually(
      async () => (await states(marketing)).every((s) => s.email.status === 'delivered'),
      120_000,
      'marketing delivered',
    );
    assert.equal(fromAddress(mx, '127.0.0.4', mid), 4, 'marketing warms the new address');
  });

  it('with no warm address the excess waits, with its reason, never bounced; the next day lets more go', async () => {
    const id = await pool('cold', ['127.0.0.6']);
    await api('POST', '/v1/ip-pools/warmup', { address: '127.0.0.6', schedule: [2, 4] });
    await sleep(WARMUP_REFRESH_MS + 100);
    const base = mx.messages.length;
    const ids = await queue(5, id);
    await eventually(
      async () => (await states(ids)).filter((s) => s.email.status === 'delivered').length === 2,
      120_000,
      "the first day's two",
    );
    await sleep(300);
    const waiting = (await states(ids)).filter((s) => s.email.status !== 'delivered');
    assert.equal(waiting.length, 3);
    for (const s of waiting) {
      assert.equal(s.email.status, 'queued', 'waiting, not bounced or failed');
      assert.equal(s.items[0]!.attempts, 0, 'no attempt counted');
      assert.match(
        s.items[0]!.last_response!,
        /IP warm-up: 127\.0\.0\.6 has sent its 2 of warm-up day 1 to google, and pool cold has no warm address: waits until/,
      );
    }
    assert.equal(fromAddress(mx, '127.0.0.6', base), 2);
    // Day 2 (6 s after the start): a cap of 4, so the three waiting go.
    await eventually(
      async () => (await states(ids)).every((s) => s.email.status === 'delivered'),
      120_000,
      'the rest on day 2',
    );
    assert.equal(fromAddress(mx, '127.0.0.6', base), 5);
  });
});

/** Two nodes on one PostgreSQL database share an address's warm-up: between them, never more than the day's cap. */
describe(
  'IP warm-up shared by two nodes',
  { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' },
  () => {
    let dns: TestDns;
    let mx: TestMx;
    let a: TestServer;
    let b: TestServer;

    before(async () => {
      dns = await startDnsServer();
      mx = await startMxServer();
      const secretKey = randomBytes(32).toString('base64');
      a = await startTestServer({ ...deliveryConfig(dns, mx, 3600), secretKey });
      b = await startTestServer({ ...deliveryConfig(dns, mx, 3600), secretKey, database: a.config.database });
      await addVerifiedDomain(a, dns, SENDER);
      routeGoogle(dns);
    });
    after(async () => {
      await b?.close();
      await a?.close();
      await mx?.close();
      await dns?.close();
    });

    it('each node sends from the warming address, the two together at most the cap', async () => {
      const master = await a.key({ master: true });
      const created = await request(a.httpUrl, 'POST', '/v1/ip-pools', {
        key: master,
        body: { name: 'shared', addresses: [{ address: '127.0.0.7' }] },
      });
      assert.equal(created.status, 201, show(created));
      assert.equal(
        (
          await request(b.httpUrl, 'POST', '/v1/ip-pools/warmup', {
            key: master,
            body: { address: '127.0.0.7', schedule: [5, 10] },
          })
        ).status,
        200,
      );
      await sleep(WARMUP_REFRESH_MS + 100);
      const ids: string[] = [];
      for (let i = 0; i < 14; i++)
        ids.push(
          (
            await queueEmail(a.runtime.store.db, {
              workspaceId: a.workspaceId,
              domain: SENDER,
              to: [`n${i}@${i % 2 ? 'one' : 'two'}.test`],
              ipPoolId: created.body.id,
              type: 'marketing',
            })
          ).id,
        );
      a.workers.wake('delivery');
      b.workers.wake('delivery');
      await eventually(async () => mx.messages.length >= 5, 120_000, 'the cap delivered');
      await sleep(1500);
      assert.equal(mx.messages.length, 5, "never more than the day's cap between the two nodes");
      const attempts = await a.runtime.store.db
        .selectFrom('delivery_attempts')
        .select(['id'])
        .where('email_id', 'in', ids)
        .execute();
      assert.equal(attempts.length, 5, 'the others waited without an attempt');
      const count = await a.runtime.store.db
        .selectFrom('warmup_counts')
        .selectAll()
        .where('address', '=', '127.0.0.7')
        .execute();
      assert.deepEqual(
        count.map((c) => [c.provider, c.count]),
        [['google', 5]],
      );
    });
  },
);

/**
 * Issue 32, defect 4: the day's cap counts what was sent, not what was tried. The provider
 * answers "slow down" to the first messages of a warming address: they are deferred, the
 * provider pauses, and the rows wait. What they had reserved of the cap is given back, so
 * after the pause the day's total still reaches the cap, never more.
 */
describe('IP warm-up through a pause', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    const config = deliveryConfig(dns, mx, 3600);
    server = await startTestServer({
      ...config,
      delivery: { ...config.delivery, backoff: { pauseSeconds: 1, maxPauseSeconds: 2 } },
    });
    await addVerifiedDomain(server, dns, SENDER);
    routeGoogle(dns);
  });
  after(async () => {
    await server?.close();
    await mx?.close();
    await dns?.close();
  });

  it('messages deferred by a slow-down give their share of the cap back: the day still sends its cap', async () => {
    const master = await server.key({ master: true });
    const created = await request(server.httpUrl, 'POST', '/v1/ip-pools', {
      key: master,
      body: { name: 'throttled', addresses: [{ address: '127.0.0.8' }] },
    });
    assert.equal(created.status, 201, show(created));
    assert.equal(
      (
        await request(server.httpUrl, 'POST', '/v1/ip-pools/warmup', {
          key: master,
          body: { address: '127.0.0.8', schedule: [6, 12] },
        })
      ).status,
      200,
    );
    await sleep(WARMUP_REFRESH_MS + 100);
    let refused = 0;
    mx.hooks.onData = () =>
      refused++ < 3
        ? {
            code: 421,
            text: '4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address.',
          }
        : undefined;
    const base = mx.messages.length;
    const ids: string[] = [];
    for (let i = 0; i < 8; i++)
      ids.push(
        (
          await queueEmail(server.runtime.store.db, {
            workspaceId: server.workspaceId,
            domain: SENDER,
            to: [`p${i}@${i % 2 ? 'one' : 'two'}.test`],
            ipPoolId: created.body.id,
            type: 'marketing',
          })
        ).id,
      );
    server.workers.wake('delivery');
    await eventually(
      async () => fromAddress(mx, '127.0.0.8', base) >= 6,
      120_000,
      "the day's cap of 6 delivered after the pause",
    );
    assert.ok(refused >= 3, 'the provider slowed us down first');
    await sleep(1500);
    assert.equal(fromAddress(mx, '127.0.0.8', base), 6, 'never more than the cap');
    const count = await server.runtime.store.db
      .selectFrom('warmup_counts')
      .selectAll()
      .where('address', '=', '127.0.0.8')
      .execute();
    assert.deepEqual(
      count.map((c) => [c.provider, c.count]),
      [['google', 6]],
      'the count is what was sent',
    );
    const waiting = (await Promise.all(ids.map((id) => emailState(server.runtime.store.db, id)))).filter(
      (s) => s.email.status !== 'delivered',
    );
    assert.equal(waiting.length, 2, 'the two beyond the cap wait for tomorrow');
    // Each waits for the next warm-up day (an hour after the start here), not for a retry today.
    await eventually(
      async () => {
        const rows = await server.runtime.store.db
          .selectFrom('queue_items')
          .select(['next_attempt_at'])
          .where(
            'email_id',
            'in',
            waiting.map((w) => w.email.id),
          )
          .execute();
        return rows.length === 2 && rows.every((r) => r.next_attempt_at > Date.now() + 3_000_000);
      },
      10_000,
      'both wait for the next warm-up day',
    );
  });
});
