import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../helpers/delivery.js';
import { request, show } from '../helpers/http.js';
import { startServeRig, type ServeRig } from '../helpers/serve-rig.js';
import { createTwoSendWorkflow, emailsPerSendStep } from '../helpers/workflows.js';

/**
 * kill -9 of `mailsvc serve` while workflow runs are in progress: after a restart every run
 * finishes, and no send step created its email twice.
 */
describe('crash recovery of workflow runs', () => {
  let rig: ServeRig;
  let workflowId: string;

  before(async () => {
    rig = await startServeRig({
      name: 'wf-crash',
      deliver: { sender: 'shop.test' },
      env: {
        MAILSVC_DELIVERY_LEASE_SECONDS: '5',
        MAILSVC_DELIVERY_POLL_INTERVAL: '100',
        MAILSVC_WORKFLOWS_LEASE_SECONDS: '5',
        MAILSVC_WORKFLOWS_POLL_INTERVAL: '50',
        MAILSVC_WORKFLOWS_CONCURRENCY: '8',
      },
    });
    workflowId = await createTwoSendWorkflow(rig.runtime.services, rig.workspaceId, {
      event: 'order.placed',
      from: 'shop@shop.test',
    });
  });
  after(() => rig?.close());

  it('finishes every run after kill -9 and a restart, each send step having created one email', async (t) => {
    const total = 40;
    const first = await rig.serve();
    const url = first.url;
    for (let i = 0; i < total; i++) {
      const res = await request(url, 'POST', '/v1/events/send', {
        key: rig.key,
        body: { event: 'order.placed', email: `buyer${i}@dest.test`, payload: { n: i } },
      });
      assert.equal(res.status, 202, show(res));
    }
    // Kill while runs are spread over every state: sending, waiting at the delay, not started.
    await rig.mx.waitFor(8, 30_000);
    await first.kill();
    const db = rig.runtime.store.db;
    const atKill = await db.selectFrom('workflow_runs').select(['status', 'step_key', 'lease_owner']).execute();
    const triggersLeft = (await db.selectFrom('workflow_triggers').select('id').execute()).length;
    t.diagnostic(
      `kill -9: ${atKill.filter((r) => r.status === 'completed').length} run(s) completed, ${atKill.filter((r) => r.status === 'running').length} running ` +
        `(${atKill.filter((r) => r.lease_owner).length} leased by the dead process), ${triggersLeft} event(s) not yet consumed, ${rig.mx.messages.length} email(s) at the MX`,
    );

    const second = await rig.serve();
    try {
      const runs = await eventually(
        async () => {
          const rows = await db.selectFrom('workflow_runs').selectAll().where('workflow_id', '=', workflowId).execute();
          return rows.length === total && rows.every((r) => r.status === 'completed') ? rows : undefined;
        },
        90_000,
        'every run completed',
      );
      assert.equal(new Set(runs.map((r) => r.email)).size, total, 'one run per contact');

      // Every send step created exactly one email, whatever the crash interrupted.
      const { perStep, messageIds: expected } = await emailsPerSendStep(db);
      assert.equal(perStep.size, total * 2, 'both send steps of every run created their email');
      assert.deepEqual(
        [...perStep.values()].filter((n) => n !== 1),
        [],
        'no send step created two emails',
      );

      // At the MX: each contact got the two emails (a delivery retried after the crash may bring the same message again).
      await eventually(
        async () => [...expected].every((id) => rig.mx.messages.some((m) => m.messageId === id)),
        60_000,
        'every email at the MX',
      );
      for (let i = 0; i < total; i++) {
        const distinct = new Set(
          rig.mx.messages.filter((m) => m.to.includes(`buyer${i}@dest.test`)).map((m) => m.messageId),
        );
        assert.equal(distinct.size, 2, `buyer${i} got two different emails`);
      }
      const duplicates = rig.mx.messages.length - expected.size;
      t.diagnostic(
        `after restart: ${expected.size} emails for ${total} runs, ${duplicates} delivery duplicate(s) of the same message (at-least-once delivery)`,
      );
    } finally {
      assert.equal(await second.stop(), 0);
    }
  });
});
