import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generate } from 'selfsigned';
import { parsePolicy } from 'mailauth/lib/mta-sts.js';
import type { PolicyFetcher } from '../../src/delivery/mta-sts.js';
import { openStore } from '../../src/store/infra/db.js';
import { emailState, eventually, routeDomain } from '../helpers/delivery.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { queueEmail } from '../helpers/mail.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SENDER = 'sender.test';

const baseConfig = (dns: TestDns, port: number, extra: Record<string, unknown> = {}) => ({
  delivery: {
    enabled: true,
    dnsServers: [dns.server],
    port,
    hostname: 'mta.mailsvc.test',
    retrySchedule: [1],
    pollInterval: 50,
    signingThreads: 1,
    ...extra,
  },
  dkim: { host: 'dkim.mailsvc.test' },
});

/** Serves the policies of a map to mailsvc in place of https://mta-sts.<domain>/.well-known/mta-sts.txt. */
const servePolicies =
  (policies: Map<string, string>): PolicyFetcher =>
  async (domain) => {
    const text = policies.get(domain);
    return text ? { id: 'test', ...parsePolicy(text) } : { id: false, mode: 'none' };
  };

describe('delivery policies: MTA-STS, throttling, smarthost', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  /** Policies served to mailsvc in place of https://mta-sts.<domain>/.well-known/mta-sts.txt. */
  const policies = new Map<string, string>();

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    server = await startTestServer(baseConfig(dns, mx.port), {
      mtaStsFetcher: servePolicies(policies),
    });
    await addVerifiedDomain(server, dns, SENDER);
  });
  after(async () => {
    await server.close();
    await mx.close();
    await dns.close();
  });

  const db = () => server.runtime.store.db;
  const queue = async (to: string) => {
    const email = await queueEmail(db(), { workspaceId: server.workspaceId, domain: SENDER, to: [to] });
    server.workers.wake('delivery');
    return email;
  };
  const attemptsOf = (emailId: string, n: number) =>
    eventually(
      async () => {
        const state = await emailState(db(), emailId);
        return state.attempts.length >= n ? state : undefined;
      },
      15_000,
      `${n} attempt(s) of ${emailId}`,
    );

  it('MTA-STS enforce: no delivery to an MX the policy does not name', async () => {
    routeDomain(dns, 'sts-mismatch.test', [{ name: 'mx.sts-mismatch.test', preference: 10, a: ['127.0.0.1'] }]);
    policies.set('sts-mismatch.test', 'version: STSv1\nmode: enforce\nmx: *.elsewhere.test\nmax_age: 86400\n');
    const sessions = mx.sessions.size;
    const email = await queue('a@sts-mismatch.test');
    const state = await attemptsOf(email.id, 1);
    assert.equal(state.attempts[0]!.outcome, 'deferred');
    assert.equal(state.attempts[0]!.category, 'mta_sts');
    assert.match(state.attempts[0]!.response!, /names none of its MX hosts/);
    assert.equal(mx.sessions.size, sessions, 'no connection');
  });

  it('MTA-STS enforce: a certificate that does not verify for the MX host defers', async () => {
    routeDomain(dns, 'sts-badcert.test', [{ name: 'mx.sts-badcert.test', preference: 10, a: ['127.0.0.1'] }]);
    policies.set('sts-badcert.test', 'version: STSv1\nmode: enforce\nmx: mx.sts-badcert.test\nmax_age: 86400\n');
    const delivered = mx.messages.length;
    const email = await queue('a@sts-badcert.test');
    const state = await attemptsOf(email.id, 1);
    assert.equal(state.attempts[0]!.outcome, 'deferred');
    assert.equal(state.attempts[0]!.category, 'tls', String(state.attempts[0]!.response));
    assert.equal(mx.messages.length, delivered, 'nothing delivered over unverified TLS');
  });

  it('MTA-STS testing: a mismatch is only logged', async () => {
    routeDomain(dns, 'sts-testing.test', [{ name: 'mx.sts-testing.test', preference: 10, a: ['127.0.0.1'] }]);
    policies.set('sts-testing.test', 'version: STSv1\nmode: testing\nmx: *.elsewhere.test\nmax_age: 86400\n');
    const email = await queue('a@sts-testing.test');
    const state = await attemptsOf(email.id, 1);
    assert.equal(state.attempts[0]!.outcome, 'delivered');
  });

  it('slows down for a destination that says it gets too many connections', async () => {
    routeDomain(dns, 'busy.test', [{ name: 'mx.busy.test', preference: 10, a: ['127.0.0.1'] }]);
    routeDomain(dns, 'calm.test', [{ name: 'mx.calm.test', preference: 10, a: ['127.0.0.1'] }]);
    mx.hooks.onRcpt = (address) =>
      address.endsWith('@busy.test')
        ? { code: 421, text: '4.7.0 Too many connections from your host, slow down' }
        : undefined;
    try {
      const first = await queue('one@busy.test');
      const state = await attemptsOf(first.id, 1);
      assert.equal(state.attempts[0]!.outcome, 'deferred');
      assert.equal(state.attempts[0]!.category, 'rate_limit');
      // The domain is paused (30 s): more mail to it waits in the queue, other domains flow.
      const second = await queue('two@busy.test');
      const other = await queue('x@calm.test');
      await attemptsOf(other.id, 1);
      const waiting = await emailState(db(), second.id);
      assert.equal(waiting.items[0]!.attempts, 0, 'no attempt to the throttling domain while paused');
      assert.equal(waiting.items[0]!.status, 'queued');
    } finally {
      mx.hooks = {};
    }
  });
});

describe('MTA-STS enforce: delivery over verified TLS', () => {
  const MX_HOST = 'mx.sts-ok.test';
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let caDir: string;
  const policies = new Map<string, string>();

  before(async () => {
    // A private CA and an MX certificate it signs, valid for the MX host name only (no IP
    // address): it verifies only if mailsvc trusts the CA (delivery.tlsCaFile) and checks the
    // MX host name, not the loopback address it connects to. (RSA: selfsigned 5.5 fails to
    // encode EC certificates, "Cannot get schema for 'AlgorithmIdentifier'".)
    const ca = await generate([{ name: 'commonName', value: 'mailsvc test CA' }], {
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      ],
    });
    const leaf = await generate([{ name: 'commonName', value: MX_HOST }], {
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: MX_HOST }] },
      ],
    });
    dns = await startDnsServer();
    mx = await startMxServer({ tls: { key: leaf.private, cert: leaf.cert } });
    // The server reads the file at start, before its own temp directory exists.
    caDir = mkdtempSync(join(tmpdir(), 'mailsvc-ca-'));
    const caFile = join(caDir, 'ca.pem');
    writeFileSync(caFile, ca.cert);
    server = await startTestServer(baseConfig(dns, mx.port, { tlsCaFile: caFile }), {
      mtaStsFetcher: servePolicies(policies),
    });
    await addVerifiedDomain(server, dns, SENDER);
  });
  after(async () => {
    await server.close();
    await mx.close();
    await dns.close();
    rmSync(caDir, { recursive: true, force: true });
  });

  const db = () => server.runtime.store.db;

  it('delivers to the MX the policy names, over TLS with its certificate verified', async () => {
    routeDomain(dns, 'sts-ok.test', [{ name: MX_HOST, preference: 10, a: ['127.0.0.1'] }]);
    policies.set('sts-ok.test', `version: STSv1\nmode: enforce\nmx: ${MX_HOST}\nmax_age: 86400\n`);
    const email = await queueEmail(db(), { workspaceId: server.workspaceId, domain: SENDER, to: ['a@sts-ok.test'] });
    server.workers.wake('delivery');
    const state = await eventually(
      async () => {
        const s = await emailState(db(), email.id);
        return s.attempts.length > 0 ? s : undefined;
      },
      15_000,
      'an attempt',
    );
    const attempt = state.attempts[0]!;
    assert.equal(attempt.outcome, 'delivered', String(attempt.response));
    assert.equal(attempt.mx_host, MX_HOST);
    assert.equal(attempt.tls, 1);
    assert.equal(state.email.status, 'delivered');
    const received = mx.messages.find((m) => m.to.includes('a@sts-ok.test'));
    assert.ok(received, 'the MX got the message');
    assert.equal(received.secure, true, 'over STARTTLS');
    assert.equal(received.servername, MX_HOST, 'SNI names the MX host');
    const delivered = state.events.find((e) => e.type === 'email.delivered');
    assert.equal(delivered?.data.tls, true);
  });

  it('still defers when the trusted certificate is for another host name', async () => {
    routeDomain(dns, 'sts-othername.test', [{ name: 'mx.sts-othername.test', preference: 10, a: ['127.0.0.1'] }]);
    policies.set('sts-othername.test', 'version: STSv1\nmode: enforce\nmx: mx.sts-othername.test\nmax_age: 86400\n');
    const delivered = mx.messages.length;
    const email = await queueEmail(db(), {
      workspaceId: server.workspaceId,
      domain: SENDER,
      to: ['a@sts-othername.test'],
    });
    server.workers.wake('delivery');
    const state = await eventually(
      async () => {
        const s = await emailState(db(), email.id);
        return s.attempts.length > 0 ? s : undefined;
      },
      15_000,
      'an attempt',
    );
    assert.equal(state.attempts[0]!.outcome, 'deferred');
    assert.equal(state.attempts[0]!.category, 'tls', String(state.attempts[0]!.response));
    // The CA is trusted, so what fails is the host name check.
    assert.match(state.attempts[0]!.response!, /does not match certificate's altnames/);
    assert.equal(mx.messages.length, delivered, 'nothing delivered');
  });
});

describe('delivery through a smarthost', () => {
  let dns: TestDns;
  let relay: TestMx;
  let server: TestServer;
  before(async () => {
    dns = await startDnsServer();
    relay = await startMxServer({ auth: { user: 'relay-user', pass: 'relay-pass' } });
    dns.set('smarthost.test', 'A', ['127.0.0.1']);
    server = await startTestServer(
      baseConfig(dns, 25, {
        relay: {
          host: 'smarthost.test',
          port: relay.port,
          auth: { user: 'relay-user', pass: 'relay-pass' },
          rejectUnauthorized: false,
        },
      }),
    );
    await addVerifiedDomain(server, dns, SENDER);
  });
  after(async () => {
    await server.close();
    await relay.close();
    await dns.close();
  });

  it('hands every message to the relay over TLS with AUTH, and reports email.sent only', async () => {
    const email = await queueEmail(server.runtime.store.db, {
      workspaceId: server.workspaceId,
      domain: SENDER,
      to: ['someone@no-mx-needed.test'],
    });
    server.workers.wake('delivery');
    const [received] = await relay.waitFor(1);
    assert.equal(received!.user, 'relay-user');
    assert.equal(received!.secure, true);
    const state = await eventually(async () => {
      const s = await emailState(server.runtime.store.db, email.id);
      return s.email.status === 'delivered' ? s : undefined;
    });
    assert.deepEqual(
      state.events.map((e) => e.type),
      ['email.sent'],
    );
    assert.equal(state.attempts[0]!.mx_host, 'smarthost.test');
    assert.ok(!dns.queries.includes('MX no-mx-needed.test'), 'no MX look-up with a relay');
  });
});

describe('maximum queue lifetime', () => {
  it('bounces (soft, expired) a message still deferred when its lifetime runs out', async () => {
    const dns = await startDnsServer();
    const mx = await startMxServer({ hooks: { onRcpt: () => ({ code: 451, text: '4.3.0 Try again later' }) } });
    routeDomain(dns, 'never.test', [{ name: 'mx.never.test', preference: 10, a: ['127.0.0.1'] }]);
    const server = await startTestServer(baseConfig(dns, mx.port, { retrySchedule: [1], maxQueueLifetime: 2 }));
    try {
      await addVerifiedDomain(server, dns, SENDER);
      const email = await queueEmail(server.runtime.store.db, {
        workspaceId: server.workspaceId,
        domain: SENDER,
        to: ['late@never.test'],
      });
      server.workers.wake('delivery');
      const state = await eventually(async () => {
        const s = await emailState(server.runtime.store.db, email.id);
        return s.email.status === 'bounced' ? s : undefined;
      });
      // How many attempts fit in the lifetime depends on the machine; each but the last deferred.
      assert.ok(state.attempts.slice(0, -1).every((a) => a.outcome === 'deferred'));
      assert.equal(state.attempts.at(-1)!.outcome, 'bounced');
      assert.equal(state.attempts.at(-1)!.category, 'expired');
      const bounce = state.events.find((e) => e.type === 'email.bounced')!;
      assert.deepEqual([bounce.data.bounce.type, bounce.data.bounce.category], ['soft', 'expired']);
      assert.match(bounce.data.bounce.message, /^Gave up after \d+ attempts/);
      const suppressed = await server.runtime.store.db
        .selectFrom('suppressions')
        .selectAll()
        .where('address', '=', 'late@never.test')
        .executeTakeFirst();
      assert.equal(suppressed, undefined, 'an expired message does not suppress the address');
    } finally {
      await server.close();
      await mx.close();
      await dns.close();
    }
  });
});

describe('graceful shutdown of delivery', () => {
  it('lets a transaction in flight finish, and gives back one that outlives shutdownTimeout', async () => {
    const dns = await startDnsServer();
    const mx = await startMxServer();
    routeDomain(dns, 'slow.test', [{ name: 'mx.slow.test', preference: 10, a: ['127.0.0.1'] }]);
    let release: () => void = () => {};
    let dataSeen: () => void = () => {};
    const seen = new Promise<void>((r) => (dataSeen = r));

    // First: the MX answers DATA after 300 ms; stop waits for it.
    const quick = await startTestServer(baseConfig(dns, mx.port, { shutdownTimeout: 10 }));
    await addVerifiedDomain(quick, dns, SENDER);
    mx.hooks.onData = async () => {
      dataSeen();
      await new Promise((r) => setTimeout(r, 300));
      return undefined;
    };
    const finished = await queueEmail(quick.runtime.store.db, {
      workspaceId: quick.workspaceId,
      domain: SENDER,
      to: ['a@slow.test'],
    });
    quick.workers.wake('delivery');
    await seen;
    await quick.stop();
    const store1 = openStore(quick.config.database);
    const state1 = await emailState(store1.db, finished.id);
    await store1.close();
    await quick.close();
    assert.equal(state1.email.status, 'delivered', 'the transaction in flight finished before stop returned');
    assert.equal(mx.messages.length, 1);

    // Then: the MX holds DATA until told; shutdownTimeout is 1 s, so the row is given back.
    const stuck = await startTestServer(baseConfig(dns, mx.port, { shutdownTimeout: 1 }));
    await addVerifiedDomain(stuck, dns, SENDER);
    let started: () => void = () => {};
    const startedData = new Promise<void>((r) => (started = r));
    mx.hooks.onData = () =>
      new Promise((resolve) => {
        started();
        release = () => resolve({ code: 451, text: '4.3.0 too late' });
      });
    const abandoned = await queueEmail(stuck.runtime.store.db, {
      workspaceId: stuck.workspaceId,
      domain: SENDER,
      to: ['b@slow.test'],
    });
    stuck.workers.wake('delivery');
    await startedData;
    await stuck.stop();
    release();
    const store2 = openStore(stuck.config.database);
    const state2 = await emailState(store2.db, abandoned.id);
    await store2.close();
    await stuck.close();
    assert.equal(state2.items[0]!.status, 'queued', 'given back to the queue');
    assert.equal(state2.items[0]!.lease_owner, null);
    assert.equal(state2.items[0]!.attempts, 0, 'not counted as an attempt');
    assert.equal(state2.email.status, 'queued');

    await mx.close();
    await dns.close();
  });
});
