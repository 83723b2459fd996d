import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { emailState, eventually, routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { queueEmail } from '../helpers/mail.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { testPostgresUrl } from '../helpers/postgres.js';

const SENDER = 'sender.test';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Limits per mailbox provider and source address, with the real delivery engine: two test
 * domains whose MX are Google's host names (published on the loopback DNS, pointing at the
 * loopback MX) are one provider and share its limits; another MX host has its own.
 */
describe('delivery: limits per provider and source address', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let master: string;
  /** Transactions in their DATA phase now and at most, by source address and by MX group. */
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  /**
   * Keys (`group` or `group address`) whose transactions the MX holds open until `count` of them
   * are open at once, or `ms` have passed: the limits are then what the counts show, not how fast
   * a loaded machine opens connections (with a fixed pause it had opened only 2 of a free MX's
   * 10 by the time the first answers came). Other transactions are held 150 ms.
   */
  const gather = new Map<string, { count: number; ms: number }>();

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    server = await startTestServer({
      delivery: {
        enabled: true,
        dnsServers: [dns.server],
        port: mx.port,
        hostname: 'mta.mailsvc.test',
        pollInterval: 50,
        signingThreads: 0,
        workers: 0,
        concurrency: 50,
        providerLimits: { google: { concurrency: 2, perMinute: 100_000, messagesPerConnection: 2 } },
        defaultDomainLimit: { concurrency: 10, perMinute: 100_000 },
      },
      dkim: { host: 'dkim.mailsvc.test' },
    });
    master = await server.key({ master: true });
    await addVerifiedDomain(server, dns, SENDER);
    // Two domains on Google's MX host names (as Google Workspace customers publish), one elsewhere.
    routeDomain(dns, 'one.test', [
      { name: 'aspmx.l.google.com', preference: 1, a: ['127.0.0.1'] },
      { name: 'alt1.aspmx.l.google.com', preference: 5, a: ['127.0.0.1'] },
    ]);
    routeDomain(dns, 'two.test', [
      { name: 'alt1.aspmx.l.google.com', preference: 5, a: ['127.0.0.1'] },
      { name: 'aspmx.l.google.com', preference: 1, a: ['127.0.0.1'] },
    ]);
    routeDomain(dns, 'elsewhere.test', [{ name: 'mx.elsewhere.test', preference: 10, a: ['127.0.0.1'] }]);
    mx.hooks = {
      async onData(m) {
        const group = m.to[0]!.endsWith('@elsewhere.test') ? 'elsewhere' : 'google';
        const keys = [`${group} ${m.remoteAddress}`, group];
        for (const k of keys) {
          inFlight.set(k, (inFlight.get(k) ?? 0) + 1);
          maxInFlight.set(k, Math.max(maxInFlight.get(k) ?? 0, inFlight.get(k)!));
        }
        const key = keys.find((k) => gather.has(k));
        if (key === undefined) await sleep(150);
        else {
          const { count, ms } = gather.get(key)!;
          const until = Date.now() + ms;
          while (inFlight.get(key)! < count && Date.now() < until) await sleep(10);
        }
        for (const k of keys) inFlight.set(k, inFlight.get(k)! - 1);
        return undefined;
      },
    };
  });
  after(async () => {
    await server?.close();
    await mx?.close();
    await dns?.close();
  });

  const queue = async (to: string, ipPoolId: string | null = null) => {
    const email = await queueEmail(server.runtime.store.db, {
      workspaceId: server.workspaceId,
      domain: SENDER,
      to: [to],
      ipPoolId,
    });
    return email.id;
  };
  const delivered = (ids: string[]) =>
    eventually(
      async () => {
        for (const id of ids)
          if ((await emailState(server.runtime.store.db, id)).email.status !== 'delivered') return false;
        return true;
      },
      30_000,
      `${ids.length} deliveries`,
    );

  it("two domains on Google's MX share the provider's connections; another MX host flows beside them", async () => {
    maxInFlight.clear();
    // Google's are held long enough for a third to start if the limit let it; the other MX's
    // until three are open at once, which Google's limit would never allow.
    gather.clear();
    gather.set('google', { count: 3, ms: 300 });
    gather.set('elsewhere', { count: 3, ms: 10_000 });
    const sessionsBefore = new Set(mx.sessions.keys());
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await queue(`u${i}@one.test`), await queue(`u${i}@two.test`));
    for (let i = 0; i < 6; i++) ids.push(await queue(`u${i}@elsewhere.test`));
    server.workers.wake('delivery');
    await delivered(ids);
    // Per domain the default (10) would let 12 run at once: the provider's 2 held for both domains.
    assert.equal(maxInFlight.get('google'), 2, `google at its limit, never over: ${JSON.stringify([...maxInFlight])}`);
    assert.ok(
      maxInFlight.get('elsewhere')! > 2,
      `another MX host is not held by Google's limit: ${JSON.stringify([...maxInFlight])}`,
    );
    // At most two messages per connection to the provider.
    const googleSessions = mx.messages
      .filter((m) => !m.to[0]!.endsWith('@elsewhere.test') && !sessionsBefore.has(m.sessionId))
      .map((m) => m.sessionId);
    const perSession = new Map<string, number>();
    for (const s of googleSessions) perSession.set(s, (perSession.get(s) ?? 0) + 1);
    assert.ok(Math.max(...perSession.values()) <= 2, `messages per connection: ${[...perSession.values()]}`);
    assert.ok([...perSession.values()].includes(2), 'connections are reused up to the limit');
  });

  it("the limits are per source address: two addresses of a pool each get the provider's connections", async () => {
    const pool = await request(server.httpUrl, 'POST', '/v1/ip-pools', {
      key: master,
      body: {
        name: 'pair',
        addresses: [
          { address: '127.0.0.2', ehlo: 'a.mailsvc.test' },
          { address: '127.0.0.3', ehlo: 'b.mailsvc.test' },
        ],
      },
    });
    assert.equal(pool.status, 201, show(pool));
    maxInFlight.clear();
    // Each address's transactions until its two are open, and both addresses' together.
    gather.clear();
    gather.set('google 127.0.0.2', { count: 2, ms: 5000 });
    gather.set('google 127.0.0.3', { count: 2, ms: 5000 });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await queue(`p${i}@${i % 2 ? 'one' : 'two'}.test`, pool.body.id));
    server.workers.wake('delivery');
    await delivered(ids);
    assert.equal(maxInFlight.get('google 127.0.0.2'), 2, JSON.stringify([...maxInFlight]));
    assert.equal(maxInFlight.get('google 127.0.0.3'), 2, JSON.stringify([...maxInFlight]));
    assert.ok(maxInFlight.get('google')! > 2, `both addresses at once: ${JSON.stringify([...maxInFlight])}`);
  });

  it('GET /v1/delivery/providers, `mailsvc delivery status` and /metrics show the provider with its domains and addresses', async () => {
    const providers = await eventually(
      async () => {
        const res = await request(server.httpUrl, 'GET', '/v1/delivery/providers', { key: master });
        assert.equal(res.status, 200, show(res));
        const data = res.body.data as Array<{
          provider: string;
          source: string | null;
          domains: string[];
          state: string;
          limit: { concurrency: number };
        }>;
        return data.some((p) => p.provider === 'google' && p.source === '127.0.0.3') ? data : undefined;
      },
      15_000,
      'the destinations report',
    );
    const google = providers.find((p) => p.provider === 'google' && p.source === null)!;
    assert.deepEqual(google.domains, ['one.test', 'two.test']);
    assert.equal(google.state, 'normal');
    assert.equal(google.limit.concurrency, 2);
    assert.ok(
      providers.some((p) => p.provider === 'mx.elsewhere.test'),
      'an MX host of no known provider is its own destination',
    );
    const key = await server.key();
    assert.equal(
      (await request(server.httpUrl, 'GET', '/v1/delivery/providers', { key })).status,
      403,
      'a workspace key is refused',
    );

    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const status = await runCliProcess(['delivery', 'status'], env);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^PROVIDER\s+SOURCE\s+STATE/m);
    assert.match(status.stdout, /^google\s+127\.0\.0\.2\s+normal\s+\d+\s+\d+\s+\d+ of 2\s+/m);

    const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
    assert.match(
      metrics,
      /^mailsvc_delivery_provider_state\{provider="google",source="127\.0\.0\.2",state="normal"\} 1$/m,
    );
  });
});

/**
 * Adaptive shaping: the loopback MX answers Gmail's `421 4.7.28` to one source address after a
 * few messages; Google backs off on that address only (paused, then fewer connections and a
 * lower rate), Google from the pool's other address and other providers keep flowing, nothing
 * is bounced or failed, and the address recovers step by step once Google accepts again.
 * Short windows through settings (delivery.backoff, delivery.reportInterval).
 */
describe('delivery: adaptive shaping per provider and source address', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let master: string;
  let poolId: string;
  let throttle = false;
  const accepted = new Map<string, number>();

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    server = await startTestServer({
      delivery: {
        enabled: true,
        dnsServers: [dns.server],
        port: mx.port,
        hostname: 'mta.mailsvc.test',
        pollInterval: 50,
        signingThreads: 0,
        workers: 0,
        retrySchedule: [1],
        providerLimits: { google: { concurrency: 2, perMinute: 100_000 } },
        // Long enough that the checks made during the pause (two CLI processes, slow to start on a
        // loaded machine) still find mail waiting on it; the recovery below waits for it to end.
        backoff: { pauseSeconds: 15, maxPauseSeconds: 20 },
        reportInterval: 100,
      },
      dkim: { host: 'dkim.mailsvc.test' },
      dashboard: { password: 'shaping-dashboard' },
    });
    master = await server.key({ master: true });
    await addVerifiedDomain(server, dns, SENDER);
    routeDomain(dns, 'one.test', [{ name: 'aspmx.l.google.com', preference: 1, a: ['127.0.0.1'] }]);
    routeDomain(dns, 'two.test', [{ name: 'alt1.aspmx.l.google.com', preference: 5, a: ['127.0.0.1'] }]);
    routeDomain(dns, 'elsewhere.test', [{ name: 'mx.elsewhere.test', preference: 10, a: ['127.0.0.1'] }]);
    const pool = await request(server.httpUrl, 'POST', '/v1/ip-pools', {
      key: master,
      body: {
        name: 'pair',
        addresses: [
          { address: '127.0.0.2', ehlo: 'a.mailsvc.test' },
          { address: '127.0.0.3', ehlo: 'b.mailsvc.test' },
        ],
      },
    });
    assert.equal(pool.status, 201, show(pool));
    poolId = pool.body.id;
    mx.hooks = {
      onData(m) {
        const google = !m.to[0]!.endsWith('@elsewhere.test');
        if (google && m.remoteAddress === '127.0.0.2' && throttle) {
          return {
            code: 421,
            text: '4.7.28 [127.0.0.2] Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited.',
          };
        }
        const k = `${google ? 'google' : 'elsewhere'} ${m.remoteAddress}`;
        accepted.set(k, (accepted.get(k) ?? 0) + 1);
        return undefined;
      },
    };
  });
  after(async () => {
    await server?.close();
    await mx?.close();
    await dns?.close();
  });

  const db = () => server.runtime.store.db;
  const queue = async (to: string, ipPoolId: string | null) =>
    (await queueEmail(db(), { workspaceId: server.workspaceId, domain: SENDER, to: [to], ipPoolId })).id;
  type Provider = {
    provider: string;
    source: string | null;
    state: string;
    allowed: number;
    per_minute: number;
    limit: { concurrency: number; per_minute: number };
    last_reply: string | null;
    last_reply_at: string | null;
    paused_until: string | null;
  };
  const providers = async (): Promise<Provider[]> => {
    const res = await request(server.httpUrl, 'GET', '/v1/delivery/providers', { key: master });
    assert.equal(res.status, 200, show(res));
    return res.body.data;
  };
  const find = (list: Provider[], provider: string, source: string | null) =>
    list.find((p) => p.provider === provider && p.source === source);
  const statuses = async (ids: string[]) =>
    Promise.all(ids.map(async (id) => (await emailState(db(), id)).email.status));

  it('a slow-down reply backs Google off on that address only; the rest keeps flowing; nothing bounces; then it recovers', async () => {
    // Warm: a few accepted from both addresses.
    const first: string[] = [];
    for (let i = 0; i < 4; i++) first.push(await queue(`w${i}@one.test`, poolId));
    server.workers.wake('delivery');
    await eventually(async () => (await statuses(first)).every((s) => s === 'delivered'), 120_000, 'the first mail');

    throttle = true;
    const google: string[] = [];
    for (let i = 0; i < 12; i++) google.push(await queue(`g${i}@${i % 3 ? 'one' : 'two'}.test`, poolId));
    server.workers.wake('delivery');
    const paused = await eventually(
      async () => {
        const list = await providers();
        return find(list, 'google', '127.0.0.2')?.state === 'paused' ? list : undefined;
      },
      15_000,
      'google paused on 127.0.0.2',
    );
    const bad = find(paused, 'google', '127.0.0.2')!;
    assert.match(bad.last_reply!, /^421 4\.7\.28 /);
    assert.ok(bad.paused_until && Date.parse(bad.paused_until) > Date.now(), JSON.stringify(bad));
    assert.ok(
      bad.allowed < bad.limit.concurrency || bad.per_minute < bad.limit.per_minute,
      `limits lowered: ${JSON.stringify(bad)}`,
    );
    assert.notEqual(find(paused, 'google', '127.0.0.3')?.state, 'paused', 'the other address is not paused');

    // While 127.0.0.2 is paused: Google from 127.0.0.3 and another provider flow.
    const elsewhere: string[] = [];
    for (let i = 0; i < 6; i++) elsewhere.push(await queue(`e${i}@elsewhere.test`, null));
    server.workers.wake('delivery');
    await eventually(
      async () => (await statuses(elsewhere)).every((s) => s === 'delivered'),
      120_000,
      'another provider flows',
    );
    const fromThree = (await statuses(google)).filter((s) => s === 'delivered').length;
    assert.ok(fromThree >= 1, 'Google mail from 127.0.0.3 is delivered while 127.0.0.2 is paused');
    const during = await providers();
    assert.equal(
      find(during, 'google', '127.0.0.2')?.state,
      'paused',
      'still paused: the other mail did not wait for it',
    );
    assert.equal(find(during, 'mx.elsewhere.test', null)?.state, 'normal');

    // Nothing backed off is bounced or failed; the waiting rows say why.
    const now = await statuses(google);
    assert.ok(
      now.every((s) => ['queued', 'sending', 'deferred', 'delivered'].includes(s)),
      now.join(','),
    );
    const attempts = (await Promise.all(google.map((id) => emailState(db(), id)))).flatMap((s) => s.attempts);
    assert.ok(
      attempts.some((a) => a.outcome === 'deferred' && a.category === 'rate_limit'),
      'the 421 is a deferral',
    );
    assert.ok(
      attempts.every((a) => a.outcome === 'delivered' || a.outcome === 'deferred'),
      attempts.map((a) => a.outcome).join(','),
    );
    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const listed = await runCliProcess(['queue', 'list', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    const items = JSON.parse(listed.stdout).items as Array<{ waiting: string | null; last_response: string | null }>;
    assert.ok(
      items.some((q) => /slow down from 127\.0\.0\.2|4\.7\.28/.test(`${q.waiting} ${q.last_response}`)),
      listed.stdout.slice(0, 600),
    );
    const status = await runCliProcess(['delivery', 'status'], env);
    assert.match(status.stdout, /^google\s+127\.0\.0\.2\s+(paused until \S+|backoff: limits lowered, recovering)/m);
    assert.match(status.stdout, /google from 127\.0\.0\.2: last slow-down reply at \S+: 421 4\.7\.28/);
    const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
    assert.match(
      metrics,
      /^mailsvc_delivery_provider_state\{provider="google",source="127\.0\.0\.2",state="(paused|backoff)"\} 1$/m,
    );
    const dashboard = new DashboardClient(server.httpUrl);
    assert.equal((await dashboard.signIn('shaping-dashboard')).status, 303);
    const shown = (await dashboard.get('/dashboard/delivery')).text;
    assert.match(
      shown,
      /<td>google<\/td><td>127\.0\.0\.2<\/td><td><span class="badge (bad|wait)">(paused|backoff)<\/span>/,
    );
    assert.match(shown, /421 4\.7\.28/);
    assert.match(shown, /<td>pair<\/td><td>127\.0\.0\.2<\/td><td>a\.mailsvc\.test<\/td>/);

    // Google accepts again: the waiting mail goes once the pause is over, limits climb back.
    throttle = false;
    const states: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const p = find(await providers(), 'google', '127.0.0.2');
        if (p && states[states.length - 1] !== p.state) states.push(p.state);
        await sleep(50);
      }
    })();
    await eventually(
      async () => (await statuses(google)).every((s) => s === 'delivered'),
      40_000,
      'all Google mail delivered after the pause',
    );
    const seen = new Set<string>();
    await eventually(
      async () => {
        const p = find(await providers(), 'google', '127.0.0.2');
        if (p) seen.add(p.state);
        if (p && states[states.length - 1] !== p.state) states.push(p.state);
        if (p?.state === 'normal') return true;
        // Recovery comes with accepted mail: keep some flowing.
        const more = [
          await queue(`r${Math.random().toString(36).slice(2)}@one.test`, poolId),
          await queue(`r${Math.random().toString(36).slice(2)}@two.test`, poolId),
        ];
        server.workers.wake('delivery');
        await eventually(async () => (await statuses(more)).every((s) => s === 'delivered'), 120_000, 'recovery mail');
        return false;
      },
      40_000,
      'google back to normal on 127.0.0.2',
    );
    watching = false;
    await watcher;
    // Paused, then back-off (lowered limits, recovering with each accepted message), then normal.
    const order = states.join(' > ');
    assert.match(order, /paused > backoff > (.* > )?normal$/, order);
    assert.ok((accepted.get('google 127.0.0.2') ?? 0) > 2, 'Google accepted from 127.0.0.2 again');
  });
});

/** Two nodes on one PostgreSQL database: a pause one node was asked for holds the provider on that address on both. */
describe(
  'delivery: a slow-down reply to one node pauses the provider on every node',
  { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' },
  () => {
    let dns: TestDns;
    let mx: TestMx;
    let a: TestServer;
    let b: TestServer;
    /** Connections opened from each source address. */
    const connections = new Map<string, number>();

    before(async () => {
      dns = await startDnsServer();
      mx = await startMxServer();
      const secretKey = randomBytes(32).toString('base64');
      const config = {
        secretKey,
        delivery: {
          enabled: true,
          dnsServers: [dns.server],
          port: mx.port,
          hostname: 'mta.mailsvc.test',
          pollInterval: 50,
          signingThreads: 0,
          workers: 0,
          retrySchedule: [60],
          backoff: { pauseSeconds: 20, maxPauseSeconds: 20 },
          reportInterval: 100,
        },
        dkim: { host: 'dkim.mailsvc.test' },
      };
      a = await startTestServer(config);
      b = await startTestServer({ ...config, database: a.config.database });
      await addVerifiedDomain(a, dns, SENDER);
      routeDomain(dns, 'one.test', [{ name: 'aspmx.l.google.com', preference: 1, a: ['127.0.0.1'] }]);
      mx.hooks = {
        onConnect(session) {
          const from = session.remoteAddress.replace(/^::ffff:/, '');
          connections.set(from, (connections.get(from) ?? 0) + 1);
          return undefined;
        },
        onData: () => ({
          code: 421,
          text: '4.7.28 [127.0.0.2] Our system has detected an unusual rate of unsolicited mail originating from your IP address.',
        }),
      };
    });
    after(async () => {
      await b?.close();
      await a?.close();
      await mx?.close();
      await dns?.close();
    });

    it('both nodes hold Google on 127.0.0.2 until the pause ends; nothing more is tried from there', async () => {
      const master = await a.key({ master: true });
      const pool = await request(a.httpUrl, 'POST', '/v1/ip-pools', {
        key: master,
        body: { name: 'one', addresses: [{ address: '127.0.0.2' }] },
      });
      assert.equal(pool.status, 201, show(pool));
      const db = a.runtime.store.db;
      const first = (
        await queueEmail(db, { workspaceId: a.workspaceId, domain: SENDER, to: ['x@one.test'], ipPoolId: pool.body.id })
      ).id;
      a.workers.wake('delivery');
      b.workers.wake('delivery');
      await eventually(
        async () => (await emailState(db, first)).attempts.length === 1,
        120_000,
        'the throttled attempt',
      );
      // Every node reports the pause of google|127.0.0.2 (the one that got the reply, and the other adopting it).
      await eventually(
        async () => {
          const rows = await db
            .selectFrom('delivery_destinations')
            .selectAll()
            .where('domain', '=', 'google|127.0.0.2')
            .execute();
          return rows.length === 2 && rows.every((r) => (r.paused_until ?? 0) > Date.now()) ? rows : undefined;
        },
        10_000,
        'both nodes paused',
      );
      const tried = connections.get('127.0.0.2') ?? 0;
      const more: string[] = [];
      for (let i = 0; i < 6; i++)
        more.push(
          (
            await queueEmail(db, {
              workspaceId: a.workspaceId,
              domain: SENDER,
              to: [`m${i}@one.test`],
              ipPoolId: pool.body.id,
            })
          ).id,
        );
      a.workers.wake('delivery');
      b.workers.wake('delivery');
      await sleep(1500);
      assert.equal(connections.get('127.0.0.2') ?? 0, tried, 'no node connected from 127.0.0.2 during the pause');
      for (const id of more) {
        const s = await emailState(db, id);
        assert.equal(s.attempts.length, 0, 'waiting without an attempt');
        assert.ok(['queued', 'sending'].includes(s.email.status), s.email.status);
      }
    });
  },
);
