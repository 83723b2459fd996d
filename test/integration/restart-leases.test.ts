import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { serveCli } from '../helpers/cli.js';
import { routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { verifyDomainWith } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { testDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';

/**
 * Issue 22, defect 2: mail claimed ahead of its destination's slot is not stranded by a kill -9.
 * The delivery settings are the shipped defaults but for the destination's limit (two at a time,
 * so most claimed rows wait for a slot) and the test's own DNS and MX.
 */
describe('claimed mail after kill -9', () => {
  const TOTAL = 200;
  let dir: string;
  let dns: TestDns;
  let mx: TestMx;
  let env: Record<string, string>;
  let runtime: Runtime;
  let key: string;
  let database: TestDatabase;
  /** While true, the MX answers each message after 300 ms: the gate holds most claimed rows. */
  let slow = true;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-leases-'));
    database = await testDatabase(join(dir, 'mailsvc.db'));
    dns = await startDnsServer();
    mx = await startMxServer({ hooks: { onData: () => (slow ? new Promise((r) => setTimeout(() => r(undefined), 300)) : undefined) } });
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    env = {
      MAILSVC_DATABASE: database.url,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_LOG_LEVEL: 'warn',
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
      MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
      MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
      MAILSVC_DELIVERY_PORT: String(mx.port),
      MAILSVC_DELIVERY_HOSTNAME: 'mta.mailsvc.test',
      MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: JSON.stringify({ concurrency: 2, perMinute: 1_000_000 }),
      MAILSVC_DELIVERY_MTA_STS: 'false',
    };
    runtime = await openRuntime(loadConfig({ env }), { logger: createLogger('silent') });
    const workspaceId = (await runtime.services.workspaces.ensureDefault()).id;
    key = (await runtime.services.credentials.createKey({ name: 'leases', workspaceId })).secret;
    await verifyDomainWith(runtime.services.domains, dns, 'sender.test', workspaceId);
  });
  after(async () => {
    await runtime.close();
    await mx.close();
    await dns.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = () => serveCli(env);

  /** Sends TOTAL messages through the API; returns their Message-IDs. */
  const accept = async (url: string): Promise<Set<string>> => {
    const ids = new Set<string>();
    for (let i = 0; i < TOTAL; i++) {
      const res = await request(url, 'POST', '/v1/emails', { key, body: { from: 'Shop <hello@sender.test>', to: `r${i}@dest.test`, subject: 'Order', html: '<p>Thanks</p>' } });
      assert.equal(res.status, 200, show(res));
      ids.add(`<${res.body.id}@sender.test>`);
    }
    return ids;
  };

  const claimed = async () => Number((await runtime.store.db.selectFrom('queue_items').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'sending').executeTakeFirstOrThrow()).n);

  /** Waits until every id arrived at the MX, at most `ms`; returns how long it took. */
  const allArrived = async (ids: Set<string>, ms: number): Promise<number> => {
    const start = Date.now();
    const missing = () => [...ids].filter((id) => !mx.messages.some((m) => m.messageId === id)).length;
    while (missing() > 0) {
      assert.ok(Date.now() - start < ms, `${missing()} of ${ids.size} messages still missing ${ms / 1000} s later`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return Date.now() - start;
  };

  it('a single SQLite node gives back every lease as it restarts: all mail within 10 s', { skip: testPostgresUrl() ? 'SQLite only (one node)' : false }, async (t) => {
    slow = true;
    const first = await serve();
    const ids = await accept(first.url);
    // Rows claimed ahead of their slot, held under the dead process's lease.
    for (let i = 0; i < 100 && (await claimed()) < 20; i++) await new Promise((r) => setTimeout(r, 100));
    const held = await claimed();
    assert.ok(held >= 20, `rows held waiting for a slot (${held})`);
    await first.kill();
    slow = false;
    const second = await serve();
    try {
      const took = await allArrived(ids, 10_000);
      t.diagnostic(`${held} rows held by the killed process; every message arrived ${took} ms after the restart`);
    } finally {
      await second.stop();
    }
  });

  it('two PostgreSQL nodes: the survivor of a kill -9 delivers the dead node\'s claimed mail within 60 s', { skip: testPostgresUrl() ? false : 'PostgreSQL only (several nodes)' }, async (t) => {
    slow = true;
    const a = await serve();
    const b = await serve();
    try {
      const ids = await accept(a.url);
      for (let i = 0; i < 100 && (await claimed()) < 20; i++) await new Promise((r) => setTimeout(r, 100));
      const owners = await runtime.store.db.selectFrom('queue_items').select('lease_owner').distinct().where('status', '=', 'sending').execute();
      await a.kill();
      slow = false;
      const took = await allArrived(ids, 60_000);
      t.diagnostic(`claims held by ${owners.length} node(s) at the kill; every message arrived ${took} ms after it`);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
