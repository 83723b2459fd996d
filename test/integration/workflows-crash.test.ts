import assert from 'node:assert/strict';
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
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { createTwoSendWorkflow, emailsPerSendStep } from '../helpers/workflows.js';

/**
 * kill -9 of `mailsvc serve` while workflow runs are in progress: after a restart every run
 * finishes, and no send step created its email twice.
 */
describe('crash recovery of workflow runs', () => {
  let dir: string;
  let dns: TestDns;
  let mx: TestMx;
  let env: Record<string, string>;
  let runtime: Runtime;
  let key: string;
  let workflowId: string;
  let database: TestDatabase;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-wf-crash-'));
    database = await testDatabase(join(dir, 'mailsvc.db'));
    dns = await startDnsServer();
    mx = await startMxServer();
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
      MAILSVC_DELIVERY_LEASE_SECONDS: '5',
      MAILSVC_DELIVERY_POLL_INTERVAL: '100',
      MAILSVC_DELIVERY_MTA_STS: 'false',
      MAILSVC_WORKFLOWS_LEASE_SECONDS: '5',
      MAILSVC_WORKFLOWS_POLL_INTERVAL: '50',
      MAILSVC_WORKFLOWS_CONCURRENCY: '8',
    };
    runtime = await openRuntime(loadConfig({ env }), { logger: createLogger('silent') });
    const services = runtime.services;
    const workspaceId = (await services.workspaces.ensureDefault()).id;
    key = (await services.credentials.createKey({ name: 'crash', workspaceId })).secret;
    await verifyDomainWith(services.domains, dns, 'shop.test', workspaceId);
    workflowId = await createTwoSendWorkflow(services, workspaceId, { event: 'order.placed', from: 'shop@shop.test' });
  });
  after(async () => {
    await runtime?.close();
    await mx?.close();
    await dns?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = () => serveCli(env);

  it('finishes every run after kill -9 and a restart, each send step having created one email', async (t) => {
    const total = 40;
    const { child: first, url } = await serve();
    for (let i = 0; i < total; i++) {
      const res = await request(url, 'POST', '/v1/events/send', { key, body: { event: 'order.placed', email: `buyer${i}@dest.test`, payload: { n: i } } });
      assert.equal(res.status, 202, show(res));
    }
    // Kill while runs are spread over every state: sending, waiting at the delay, not started.
    await mx.waitFor(8, 30_000);
    const exited = new Promise((r) => first.once('exit', r));
    first.kill('SIGKILL');
    await exited;
    const db = runtime.store.db;
    const atKill = await db.selectFrom('workflow_runs').select(['status', 'step_key', 'lease_owner']).execute();
    const triggersLeft = (await db.selectFrom('workflow_triggers').select('id').execute()).length;
    t.diagnostic(
      `kill -9: ${atKill.filter((r) => r.status === 'completed').length} run(s) completed, ${atKill.filter((r) => r.status === 'running').length} running ` +
        `(${atKill.filter((r) => r.lease_owner).length} leased by the dead process), ${triggersLeft} event(s) not yet consumed, ${mx.messages.length} email(s) at the MX`,
    );

    const { child: second } = await serve();
    try {
      const runs = await eventually(async () => {
        const rows = await db.selectFrom('workflow_runs').selectAll().where('workflow_id', '=', workflowId).execute();
        return rows.length === total && rows.every((r) => r.status === 'completed') ? rows : undefined;
      }, 90_000, 'every run completed');
      assert.equal(new Set(runs.map((r) => r.email)).size, total, 'one run per contact');

      // Every send step created exactly one email, whatever the crash interrupted.
      const { perStep, messageIds: expected } = await emailsPerSendStep(db);
      assert.equal(perStep.size, total * 2, 'both send steps of every run created their email');
      assert.deepEqual([...perStep.values()].filter((n) => n !== 1), [], 'no send step created two emails');

      // At the MX: each contact got the two emails (a delivery retried after the crash may bring the same message again).
      await eventually(async () => [...expected].every((id) => mx.messages.some((m) => m.messageId === id)), 60_000, 'every email at the MX');
      for (let i = 0; i < total; i++) {
        const distinct = new Set(mx.messages.filter((m) => m.to.includes(`buyer${i}@dest.test`)).map((m) => m.messageId));
        assert.equal(distinct.size, 2, `buyer${i} got two different emails`);
      }
      const duplicates = mx.messages.length - expected.size;
      t.diagnostic(`after restart: ${expected.size} emails for ${total} runs, ${duplicates} delivery duplicate(s) of the same message (at-least-once delivery)`);
    } finally {
      const stopped = new Promise<number | null>((r) => second.once('exit', (code) => r(code)));
      second.kill('SIGTERM');
      assert.equal(await stopped, 0);
    }
  });
});
