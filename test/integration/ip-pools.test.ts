import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ipPoolChecks } from '../../src/checks/ip-pool-addresses.js';
import { runCliProcess } from '../helpers/cli.js';
import { emailState, eventually } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { request, show } from '../helpers/http.js';
import type { ReceivedMessage, TestMx } from '../helpers/mx-server.js';
import type { TestServer } from '../helpers/server.js';

/**
 * IP pools with the real delivery engine: mail leaves from the loopback addresses of its pool
 * (127.0.0.2, 127.0.0.3, …) with their EHLO names, chosen per message, else per sending
 * domain, else per workspace, else the system's address.
 */
describe('IP pools', () => {
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let master: string;
  let key: string;

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { retrySchedule: [60], pollInterval: 50, signingThreads: 1, workers: 0 },
      senders: ['pooled.test', 'plain.test'],
    });
    ({ server, mx } = rig);
    master = await server.key({ master: true });
    key = await server.key();
  });
  after(async () => {
    await rig?.close();
  });

  const api = (method: string, path: string, body?: unknown, k = master) =>
    request(server.httpUrl, method, path, { key: k, body });
  const send = async (body: Record<string, unknown>): Promise<ReceivedMessage> => {
    const res = await api(
      'POST',
      '/v1/emails',
      { subject: 'Pools', text: 'Hello', to: `r-${Math.random().toString(36).slice(2)}@dest.test`, ...body },
      key,
    );
    assert.equal(res.status, 200, show(res));
    const id = res.body.id as string;
    const state = await eventually(
      async () => {
        const s = await emailState(server.runtime.store.db, id);
        return s.attempts.length > 0 ? s : undefined;
      },
      15_000,
      `an attempt of ${id}`,
    );
    assert.equal(state.attempts[0]!.outcome, 'delivered', String(state.attempts[0]!.response));
    const got = mx.messages.find((m) => m.messageId?.includes(id));
    assert.ok(got, 'the MX has the message');
    return got;
  };

  it('the operator manages pools with a master key; workspace keys cannot', async () => {
    const created = await api('POST', '/v1/ip-pools', {
      name: 'transactional',
      addresses: [{ address: '127.0.0.2', ehlo: 'tx.mailsvc.test' }],
    });
    assert.equal(created.status, 201, show(created));
    assert.deepEqual(created.body.addresses, [{ address: '127.0.0.2', ehlo: 'tx.mailsvc.test', warmup: null }]);
    assert.equal(created.body.object, 'ip_pool');

    const marketing = await api('POST', '/v1/ip-pools', {
      name: 'marketing',
      addresses: [{ address: '127.0.0.3', ehlo: 'mk.mailsvc.test' }, { address: '127.0.0.4' }],
    });
    assert.equal(marketing.status, 201, show(marketing));
    assert.equal(
      marketing.body.addresses[1].ehlo,
      'mta.mailsvc.test',
      'an address without EHLO greets as delivery.hostname',
    );

    const refused = await api('GET', '/v1/ip-pools', undefined, key);
    assert.equal(refused.status, 403, show(refused));
    assert.match(JSON.stringify(refused.body), /forbidden/);
    assert.match(JSON.stringify(refused.body), /master key/);

    const list = await api('GET', '/v1/ip-pools');
    assert.equal(list.status, 200, show(list));
    assert.deepEqual(
      list.body.data.map((p: { name: string }) => p.name),
      ['marketing', 'transactional'],
    );
    const one = await api('GET', '/v1/ip-pools/marketing');
    assert.equal(one.status, 200, show(one));
    assert.equal(one.body.id, marketing.body.id);
    assert.equal((await api('GET', '/v1/ip-pools/nope')).status, 404);
  });

  it('bad pools get a clear 4xx', async () => {
    const cases: Array<[unknown, number, RegExp]> = [
      [{ name: 'x', addresses: [{ address: '300.1.1.1' }] }, 400, /not an IPv4 or IPv6 address/],
      [{ name: 'x', addresses: [] }, 400, /at least one address/],
      [{ name: 'x' }, 400, /at least one address/],
      [{ name: 'Bad Name', addresses: [{ address: '127.0.0.5' }] }, 400, /lower-case/],
      [{ name: 'default', addresses: [{ address: '127.0.0.5' }] }, 400, /system address/],
      [{ name: 'x', addresses: [{ address: '127.0.0.5' }, { address: '127.0.0.5' }] }, 400, /listed twice/],
      [{ name: 'x', addresses: [{ address: '127.0.0.5', ehlo: 'not a host' }] }, 400, /host name/],
      [{ name: 'x', addresses: [{ address: '0.0.0.0' }] }, 400, /unspecified/],
      [{ name: 'marketing', addresses: [{ address: '127.0.0.5' }] }, 409, /already exists/],
      [
        { name: 'x', addresses: Array.from({ length: 65 }, (_, i) => ({ address: `127.0.1.${i}` })) },
        400,
        /at most 64/,
      ],
    ];
    for (const [body, status, message] of cases) {
      const res = await api('POST', '/v1/ip-pools', body);
      assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 80)}: ${show(res)}`);
      assert.match(res.body.error?.message ?? res.body.message, message);
    }
    const atLimit = await api('POST', '/v1/ip-pools', {
      name: 'wide',
      addresses: Array.from({ length: 64 }, (_, i) => ({ address: `127.0.1.${i}` })),
    });
    assert.equal(atLimit.status, 201, show(atLimit));
    const removed = await api('DELETE', '/v1/ip-pools/wide');
    assert.equal(removed.status, 200, show(removed));
    assert.equal((await api('GET', '/v1/ip-pools/wide')).status, 404);
  });

  it('no pool anywhere: mail leaves from the system address with delivery.hostname', async () => {
    const got = await send({ from: 'a@plain.test' });
    assert.equal(got.remoteAddress, '127.0.0.1');
    assert.equal(got.ehlo, 'mta.mailsvc.test');
  });

  it('the message names its pool: its address and EHLO name', async () => {
    const got = await send({ from: 'a@plain.test', ip_pool: 'transactional' });
    assert.equal(got.remoteAddress, '127.0.0.2');
    assert.equal(got.ehlo, 'tx.mailsvc.test');
    const unknown = await api(
      'POST',
      '/v1/emails',
      { from: 'a@plain.test', to: 'x@dest.test', subject: 's', text: 't', ip_pool: 'nope' },
      key,
    );
    assert.equal(unknown.status, 400, show(unknown));
    assert.match(unknown.body.error?.message ?? unknown.body.message, /ip_pool: no IP pool named "nope"/);
  });

  it('a pool of several addresses spreads its mail over them, each with its own EHLO name', async () => {
    const seen = new Map<string, string>();
    for (let i = 0; i < 4; i++) {
      const got = await send({ from: 'a@plain.test', ip_pool: 'marketing' });
      seen.set(got.remoteAddress, got.ehlo);
    }
    assert.deepEqual(Object.fromEntries(seen), { '127.0.0.3': 'mk.mailsvc.test', '127.0.0.4': 'mta.mailsvc.test' });
  });

  it("the sending domain's pool, else the workspace's; the message's own wins over both", async () => {
    const domains = await api('GET', '/v1/domains', undefined, key);
    const pooled = domains.body.data.find((d: { name: string }) => d.name === 'pooled.test');
    const patched = await api('PATCH', `/v1/domains/${pooled.id}`, { ip_pool: 'transactional' }, key);
    assert.equal(patched.status, 200, show(patched));
    assert.deepEqual([patched.body.object, patched.body.id], ['domain', pooled.id]);
    const bad = await api('PATCH', `/v1/domains/${pooled.id}`, { ip_pool: 'nope' }, key);
    assert.equal(bad.status, 400, show(bad));
    assert.equal(
      (await api('GET', `/v1/domains/${pooled.id}`, undefined, key)).body.ip_pool_id,
      (await api('GET', '/v1/ip-pools/transactional')).body.id,
    );

    await server.runtime.services.ipPools.setWorkspacePool(server.workspaceId, 'marketing');
    try {
      assert.equal((await send({ from: 'a@pooled.test' })).remoteAddress, '127.0.0.2', "the domain's pool");
      assert.match((await send({ from: 'a@plain.test' })).remoteAddress, /^127\.0\.0\.[34]$/, "the workspace's pool");
      const own = await send({ from: 'a@pooled.test', ip_pool: 'marketing' });
      assert.match(own.remoteAddress, /^127\.0\.0\.[34]$/, "the message's own pool");
    } finally {
      await server.runtime.services.ipPools.setWorkspacePool(server.workspaceId, null);
    }
  });

  it('a pool in use cannot be deleted; PATCH renames and replaces addresses', async () => {
    const refused = await api('DELETE', '/v1/ip-pools/transactional');
    assert.equal(refused.status, 409, show(refused));
    assert.match(refused.body.error?.message ?? refused.body.message, /in use \(1 domain/);
    const renamed = await api('PATCH', '/v1/ip-pools/transactional', {
      name: 'tx',
      addresses: [{ address: '127.0.0.2', ehlo: 'tx2.mailsvc.test' }],
    });
    assert.equal(renamed.status, 200, show(renamed));
    assert.equal(renamed.body.name, 'tx');
    // Delivery reads pools again within a few seconds: the new EHLO name is used.
    await eventually(
      async () => (await send({ from: 'a@pooled.test' })).ehlo === 'tx2.mailsvc.test',
      120_000,
      'the new EHLO name',
    );
    const empty = await api('PATCH', '/v1/ip-pools/tx', {});
    assert.equal(empty.status, 400, show(empty));
  });

  it('an address this host cannot bind: the mail is deferred with the reason, never sent from another; doctor fails it', async () => {
    const created = await api('POST', '/v1/ip-pools', {
      name: 'unbound',
      addresses: [{ address: '192.0.2.1', ehlo: 'bad.mailsvc.test' }],
    });
    assert.equal(created.status, 201, show(created));
    const res = await api(
      'POST',
      '/v1/emails',
      { from: 'a@plain.test', to: 'unbound@dest.test', subject: 's', text: 't', ip_pool: 'unbound' },
      key,
    );
    assert.equal(res.status, 200, show(res));
    const state = await eventually(async () => {
      const s = await emailState(server.runtime.store.db, res.body.id);
      return s.attempts.length > 0 ? s : undefined;
    });
    assert.equal(state.attempts[0]!.outcome, 'deferred');
    assert.equal(state.attempts[0]!.category, 'config');
    assert.match(state.attempts[0]!.response!, /cannot send from 192\.0\.2\.1 \(IP pool unbound\).*mailsvc doctor/);
    assert.equal(mx.messages.filter((m) => m.to.includes('unbound@dest.test')).length, 0);

    const checks = await ipPoolChecks(server.runtime.store.db, server.runtime.deps.resolver);
    const bad = checks.find((c) => c.name === 'ip_pool unbound 192.0.2.1');
    assert.equal(bad?.status, 'failing', JSON.stringify(checks));
    assert.equal(bad?.required, true);
    const good = checks.find((c) => c.name === 'ip_pool tx 127.0.0.2');
    assert.notEqual(good?.status, 'failing', JSON.stringify(good));
  });

  it("a broadcast names its pool: every message of it leaves from the pool's addresses", async () => {
    const { services } = server.runtime;
    const segment = await services.audiences.create(server.workspaceId, 'Pool list');
    const emails = ['b1@dest.test', 'b2@dest.test', 'b3@dest.test'];
    for (const email of emails) await services.subscribers.upsert(server.workspaceId, { email });
    await services.audiences.addMembers(server.workspaceId, segment.id, { emails });
    const base = {
      from: 'News <news@plain.test>',
      subject: 'Pooled news',
      html: '<p>Hello</p>',
      segment_id: segment.id,
    };
    const bad = await api('POST', '/v1/broadcasts', { ...base, ip_pool: 'nope' }, key);
    assert.equal(bad.status, 400, show(bad));
    assert.match(bad.body.error?.message ?? bad.body.message, /ip_pool: no IP pool named "nope"/);
    const created = await api('POST', '/v1/broadcasts', { ...base, ip_pool: 'marketing', send: true }, key);
    assert.equal(created.status, 201, show(created));
    const shown = await api('GET', `/v1/broadcasts/${created.body.id}`, undefined, key);
    assert.equal(shown.body.ip_pool_id, (await api('GET', '/v1/ip-pools/marketing')).body.id);
    const got = await eventually(
      async () => {
        const list = mx.messages.filter((m) => emails.includes(m.to[0]!));
        return list.length === emails.length ? list : undefined;
      },
      20_000,
      'the broadcast delivered',
    );
    for (const m of got) assert.match(m.remoteAddress, /^127\.0\.0\.[34]$/, `${m.to[0]} left from ${m.remoteAddress}`);
  });

  it('CLI: ip-pools create with --address/--ehlo pairs, list, use, delete', async () => {
    const env = {
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: server.dir,
      MAILSVC_LOG_LEVEL: 'warn',
      MAILSVC_DELIVERY_HOSTNAME: 'mta.mailsvc.test',
    };
    const created = await runCliProcess(
      [
        'ip-pools',
        'create',
        'cli',
        '--address',
        '127.0.0.6',
        '--ehlo',
        'six.mailsvc.test',
        '--address',
        '127.0.0.7',
        '--json',
      ],
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual(JSON.parse(created.stdout).addresses, [
      { address: '127.0.0.6', ehlo: 'six.mailsvc.test', warmup: null },
      { address: '127.0.0.7', ehlo: 'mta.mailsvc.test', warmup: null },
    ]);
    const early = await runCliProcess(
      ['ip-pools', 'create', 'cli2', '--ehlo', 'x.mailsvc.test', '--address', '127.0.0.8'],
      env,
    );
    assert.notEqual(early.code, 0);
    assert.match(early.stderr, /give --address first/);
    const list = await runCliProcess(['ip-pools', 'list'], env);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /cli\s+\S+\s+127\.0\.0\.6\s+six\.mailsvc\.test/);
    const use = await runCliProcess(
      ['ip-pools', 'use', 'cli', '--domain', 'plain.test', '--workspace', server.workspaceId],
      env,
    );
    assert.equal(use.code, 0, use.stderr);
    assert.match((await send({ from: 'a@plain.test' })).remoteAddress, /^127\.0\.0\.[67]$/);
    assert.equal((await runCliProcess(['ip-pools', 'delete', 'cli'], env)).code, 1, 'in use by plain.test');
    assert.equal(
      (
        await runCliProcess(
          ['ip-pools', 'use', 'default', '--domain', 'plain.test', '--workspace', server.workspaceId],
          env,
        )
      ).code,
      0,
    );
    const deleted = await runCliProcess(['ip-pools', 'delete', 'cli'], env);
    assert.equal(deleted.code, 0, deleted.stderr);
  });
});
