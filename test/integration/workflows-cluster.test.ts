import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { serveCli } from '../helpers/cli.js';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { verifyDomainWith } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';
import { createTwoSendWorkflow, emailsPerSendStep } from '../helpers/workflows.js';

/**
 * Two `mailsvc serve` processes on one PostgreSQL database share workflow runs: both claim
 * runs (SKIP LOCKED), no send step executes twice, and after kill -9 of one the other
 * finishes what it held.
 */
describe('workflow runs on two nodes sharing PostgreSQL', { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' }, () => {
  let database: TestDatabase;
  let dns: TestDns;
  let mx: TestMx;
  let runtime: Runtime;
  let key: string;
  let workflowId: string;
  const dirs: string[] = [];
  const nodes: ChildProcess[] = [];
  const secretKey = randomBytes(32).toString('base64');

  const envFor = (name: string): Record<string, string> => {
    const dir = mkdtempSync(join(tmpdir(), `mailsvc-wf-node-${name}-`));
    dirs.push(dir);
    return {
      MAILSVC_DATABASE: database.url,
      MAILSVC_SECRET_KEY: secretKey,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_LOG_LEVEL: 'warn',
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
      MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
      MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
      MAILSVC_DELIVERY_PORT: String(mx.port),
      MAILSVC_DELIVERY_HOSTNAME: `mta-${name}.mailsvc.test`,
      MAILSVC_DELIVERY_LEASE_SECONDS: '5',
      MAILSVC_DELIVERY_POLL_INTERVAL: '100',
      MAILSVC_DELIVERY_MTA_STS: 'false',
      MAILSVC_DELIVERY_SIGNING_THREADS: '0',
      MAILSVC_WORKFLOWS_LEASE_SECONDS: '5',
      MAILSVC_WORKFLOWS_POLL_INTERVAL: '50',
      MAILSVC_WORKFLOWS_CONCURRENCY: '4',
    };
  };

  const serve = async (name: string) => {
    const node = await serveCli(envFor(name));
    nodes.push(node.child);
    return node;
  };

  before(async () => {
    database = await createTestDatabase();
    dns = await startDnsServer();
    mx = await startMxServer();
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    runtime = await openRuntime(loadConfig({ env: envFor('setup') }), { logger: createLogger('silent') });
    const services = runtime.services;
    const workspaceId = (await services.workspaces.ensureDefault()).id;
    key = (await services.credentials.createKey({ name: 'cluster', workspaceId })).secret;
    await verifyDomainWith(services.domains, dns, 'shop.test', workspaceId);
    workflowId = await createTwoSendWorkflow(services, workspaceId, { event: 'joined', from: 'team@shop.test' });
  });
  after(async () => {
    for (const child of nodes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await runtime?.close();
    await mx?.close();
    await dns?.close();
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('both nodes execute runs, no step twice; kill -9 of one leaves its runs to the other', async (t) => {
    const a = await serve('a');
    const b = await serve('b');
    const db = runtime.store.db;
    // Which processes hold runs, seen from the database while the work goes on.
    const owners = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      for (let i = 0; watching && i < 2000; i++) {
        for (const r of await db.selectFrom('workflow_runs').select('lease_owner').where('lease_owner', 'is not', null).execute()) owners.add(r.lease_owner!.split(':')[1]!);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    const total = 80;
    const event = (url: string, i: number) => request(url, 'POST', '/v1/events/send', { key, body: { event: 'joined', email: `member${i}@dest.test`, payload: { n: i } } });
    for (let i = 0; i < total / 2; i++) {
      const res = await event(i % 2 === 0 ? a.url : b.url, i);
      assert.equal(res.status, 202, show(res));
    }
    // Runs in progress on both nodes; then node a dies without a word.
    await mx.waitFor(10, 30_000);
    const exited = new Promise((r) => a.child.once('exit', r));
    a.child.kill('SIGKILL');
    await exited;
    const heldByDead = (await db.selectFrom('workflow_runs').select('id').where('lease_owner', 'like', `%:${a.child.pid}:%`).execute()).length;
    for (let i = total / 2; i < total; i++) {
      const res = await event(b.url, i);
      assert.equal(res.status, 202, show(res));
    }

    const runs = await eventually(async () => {
      const rows = await db.selectFrom('workflow_runs').select(['status', 'email']).where('workflow_id', '=', workflowId).execute();
      return rows.length === total && rows.every((r) => r.status === 'completed') ? rows : undefined;
    }, 90_000, 'every run completed');
    watching = false;
    await watcher;
    assert.equal(new Set(runs.map((r) => r.email)).size, total);
    t.diagnostic(`run holders seen: ${[...owners].map((pid) => (pid === String(a.child.pid) ? `node a (${pid})` : pid === String(b.child.pid) ? `node b (${pid})` : pid)).join(', ')}; ${heldByDead} run(s) leased by node a when it died`);
    assert.ok(owners.has(String(a.child.pid)) && owners.has(String(b.child.pid)), 'both nodes executed runs');

    const { perStep, messageIds: ids } = await emailsPerSendStep(db);
    assert.equal(perStep.size, total * 2);
    assert.deepEqual([...perStep.values()].filter((n) => n !== 1), [], 'no send step executed twice');
    await eventually(async () => [...ids].every((id) => mx.messages.some((m) => m.messageId === id)), 60_000, 'every email at the MX');
    for (let i = 0; i < total; i++) assert.equal(new Set(mx.messages.filter((m) => m.to.includes(`member${i}@dest.test`)).map((m) => m.messageId)).size, 2);

    const stopped = new Promise<number | null>((r) => b.child.once('exit', (code) => r(code)));
    b.child.kill('SIGTERM');
    assert.equal(await stopped, 0);
  });
});
