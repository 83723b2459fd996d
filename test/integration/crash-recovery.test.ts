import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { allArrived, eventually } from '../helpers/delivery.js';
import { request, show } from '../helpers/http.js';
import { startServeRig, type ServeRig } from '../helpers/serve-rig.js';

/**
 * kill -9 of `mailsvc serve` with messages in flight: after a restart every accepted message
 * arrives (at least once; duplicates are allowed and counted).
 */
describe('crash recovery of delivery', () => {
  let rig: ServeRig;

  before(async () => {
    // A slow MX keeps messages in flight: each DATA is answered after 50 ms.
    rig = await startServeRig({
      name: 'crash',
      deliver: { mx: { hooks: { onData: () => new Promise((r) => setTimeout(() => r(undefined), 50)) } } },
      env: {
        MAILSVC_DELIVERY_LEASE_SECONDS: '5',
        MAILSVC_DELIVERY_RETRY_SCHEDULE: '[1]',
        MAILSVC_DELIVERY_POLL_INTERVAL: '100',
        MAILSVC_DELIVERY_CONCURRENCY: '4',
      },
    });
  });
  after(() => rig?.close());

  it('delivers every accepted message after kill -9 and a restart', async (t) => {
    const total = 60;
    const ids: string[] = [];
    /** Accepted = answered 200 by POST /v1/emails. */
    const accept = async (url: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await request(url, 'POST', '/v1/emails', {
          key: rig.key,
          body: {
            from: 'Shop <hello@sender.test>',
            to: `r${ids.length}@dest.test`,
            subject: 'Order confirmation',
            html: '<p>Thanks!</p>',
          },
        });
        assert.equal(res.status, 200, show(res));
        ids.push(`<${res.body.id}@sender.test>`);
      }
    };

    const first = await rig.serve();
    await accept(first.url, total / 2);
    await rig.mx.waitFor(5, 30_000);
    await accept(first.url, total / 2); // more mail accepted while the server delivers
    await first.kill();
    const beforeRestart = rig.mx.messages.length;
    const inFlight = await rig.runtime.store.db
      .selectFrom('queue_items')
      .select('id')
      .where('status', '=', 'sending')
      .execute();

    const second = await rig.serve();
    try {
      const expected = new Set(ids);
      await allArrived(rig.mx, expected, 60_000);
      const counts = new Map<string, number>();
      for (const m of rig.mx.messages) counts.set(m.messageId!, (counts.get(m.messageId!) ?? 0) + 1);
      const duplicates = [...counts.values()].filter((c) => c > 1).length;
      assert.equal(counts.size, total, 'every accepted message arrived');
      assert.ok([...counts.keys()].every((id) => expected.has(id)));
      // Duplicates are allowed (at-least-once): a message delivered but not yet recorded when
      // the process died is delivered again.
      t.diagnostic(
        `kill -9: ${beforeRestart} delivered before the kill, ${inFlight.length} row(s) held by the dead process, ${duplicates} duplicate(s) after restart`,
      );
      const db = rig.runtime.store.db;
      await eventually(
        async () =>
          (await db.selectFrom('queue_items').select('status').where('status', '!=', 'delivered').execute()).length ===
          0,
        120_000,
        'every row ends delivered',
      );
    } finally {
      assert.equal(await second.stop(), 0);
    }
  });
});
