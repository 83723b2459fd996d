import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../helpers/delivery.js';
import { request, show } from '../helpers/http.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { startServeRig, type ServeRig } from '../helpers/serve-rig.js';
import { createTwoSendWorkflow, emailsPerSendStep } from '../helpers/workflows.js';

/**
 * Two `mailsvc serve` processes on one PostgreSQL database share workflow runs: both claim
 * runs (SKIP LOCKED), no send step executes twice, and after kill -9 of one the other
 * finishes what it held.
 */
describe(
  'workflow runs on two nodes sharing PostgreSQL',
  { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' },
  () => {
    let rig: ServeRig;
    let workflowId: string;

    before(async () => {
      rig = await startServeRig({
        name: 'wf-cluster',
        deliver: { sender: 'shop.test' },
        env: {
          MAILSVC_DELIVERY_LEASE_SECONDS: '5',
          MAILSVC_DELIVERY_POLL_INTERVAL: '100',
          MAILSVC_DELIVERY_SIGNING_THREADS: '0',
          MAILSVC_WORKFLOWS_LEASE_SECONDS: '5',
          MAILSVC_WORKFLOWS_POLL_INTERVAL: '50',
          MAILSVC_WORKFLOWS_CONCURRENCY: '4',
        },
      });
      workflowId = await createTwoSendWorkflow(rig.runtime.services, rig.workspaceId, {
        event: 'joined',
        from: 'team@shop.test',
      });
    });
    after(() => rig?.close());

    it('both nodes execute runs, no step twice; kill -9 of one leaves its runs to the other', async (t) => {
      const a = await rig.serve('a');
      const b = await rig.serve('b');
      const db = rig.runtime.store.db;
      // Which processes hold runs, seen from the database while the work goes on.
      const owners = new Set<string>();
      let watching = true;
      const watcher = (async () => {
        for (let i = 0; watching && i < 2000; i++) {
          for (const r of await db
            .selectFrom('workflow_runs')
            .select('lease_owner')
            .where('lease_owner', 'is not', null)
            .execute())
            owners.add(r.lease_owner!.split(':')[1]!);
          await new Promise((r) => setTimeout(r, 10));
        }
      })();

      const total = 80;
      const event = (url: string, i: number) =>
        request(url, 'POST', '/v1/events/send', {
          key: rig.key,
          body: { event: 'joined', email: `member${i}@dest.test`, payload: { n: i } },
        });
      for (let i = 0; i < total / 2; i++) {
        const res = await event(i % 2 === 0 ? a.url : b.url, i);
        assert.equal(res.status, 202, show(res));
      }
      // Runs in progress on both nodes; then node a dies without a word.
      await rig.mx.waitFor(10, 30_000);
      await a.kill();
      const heldByDead = (
        await db.selectFrom('workflow_runs').select('id').where('lease_owner', 'like', `%:${a.child.pid}:%`).execute()
      ).length;
      for (let i = total / 2; i < total; i++) {
        const res = await event(b.url, i);
        assert.equal(res.status, 202, show(res));
      }

      const runs = await eventually(
        async () => {
          const rows = await db
            .selectFrom('workflow_runs')
            .select(['status', 'email'])
            .where('workflow_id', '=', workflowId)
            .execute();
          return rows.length === total && rows.every((r) => r.status === 'completed') ? rows : undefined;
        },
        90_000,
        'every run completed',
      );
      watching = false;
      await watcher;
      assert.equal(new Set(runs.map((r) => r.email)).size, total);
      t.diagnostic(
        `run holders seen: ${[...owners].map((pid) => (pid === String(a.child.pid) ? `node a (${pid})` : pid === String(b.child.pid) ? `node b (${pid})` : pid)).join(', ')}; ${heldByDead} run(s) leased by node a when it died`,
      );
      assert.ok(owners.has(String(a.child.pid)) && owners.has(String(b.child.pid)), 'both nodes executed runs');

      const { perStep, messageIds: ids } = await emailsPerSendStep(db);
      assert.equal(perStep.size, total * 2);
      assert.deepEqual(
        [...perStep.values()].filter((n) => n !== 1),
        [],
        'no send step executed twice',
      );
      await eventually(
        async () => [...ids].every((id) => rig.mx.messages.some((m) => m.messageId === id)),
        60_000,
        'every email at the MX',
      );
      for (let i = 0; i < total; i++)
        assert.equal(
          new Set(rig.mx.messages.filter((m) => m.to.includes(`member${i}@dest.test`)).map((m) => m.messageId)).size,
          2,
        );

      assert.equal(await b.stop(), 0);
    });
  },
);
