import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { eventually, routeDomain } from '../helpers/delivery.js';
import type { TestDns } from '../helpers/dns-server.js';
import { queueEmail } from '../helpers/mail.js';
import type { TestMx } from '../helpers/mx-server.js';
import { manualClock, type TestServer } from '../helpers/server.js';

/**
 * A backlog (more due rows than the workers hold in memory, most for one destination at its
 * limit) drains without the claim loop ever sleeping its poll interval. The poll interval is
 * an hour and the injected clock stands still: only the loop's own wake-ups (room freed, a
 * held-back destination running low) can move the queue.
 */
describe('delivery: a backlog drains at once', () => {
  const SENDER = 'sender.test';
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer;
  const clock = manualClock(Date.now() + 1000);

  before(async () => {
    ({ server, dns, mx } = rig = await startDeliveringServer({
      // 50 rows in memory at most (the floor), two transactions per domain at once.
      delivery: {
        pollInterval: 3_600_000,
        concurrency: 3,
        defaultDomainLimit: { concurrency: 2, perMinute: 1_000_000 },
        signingThreads: 0,
      },
      config: { webhooks: { enabled: false } },
      senders: [SENDER],
      clock,
    }));
    routeDomain(dns, 'big.test', [{ name: 'mx.big.test', preference: 10, a: ['127.0.0.1'] }]);
    routeDomain(dns, 'small.test', [{ name: 'mx.small.test', preference: 10, a: ['127.0.0.1'] }]);
  });
  after(() => rig?.close());

  it('delivers 3 x the rows held in memory, for a destination at its limit and one beside it, with the clock standing still', async () => {
    const db = server.runtime.store.db;
    const ids: string[] = [];
    for (let i = 0; i < 150; i++)
      ids.push(
        (
          await queueEmail(db, {
            workspaceId: server.workspaceId,
            domain: SENDER,
            to: [`user${i}@big.test`],
            now: clock.now(),
          })
        ).id,
      );
    for (let i = 0; i < 10; i++)
      ids.push(
        (
          await queueEmail(db, {
            workspaceId: server.workspaceId,
            domain: SENDER,
            to: [`user${i}@small.test`],
            now: clock.now(),
          })
        ).id,
      );
    server.workers.wake('delivery');

    await mx.waitFor(160, 60_000);
    const done = await eventually(
      async () => {
        const rows = await db.selectFrom('emails').select(['status']).where('id', 'in', ids).execute();
        return rows.every((r) => r.status === 'delivered') ? rows : undefined;
      },
      30_000,
      'every email delivered',
    );
    assert.equal(done.length, 160);
    assert.equal(new Set(mx.messages.map((m) => m.to[0])).size, 160, 'each recipient once');

    // The destination limit held mail back, and /metrics says so.
    const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
    const waits = /^mailsvc_delivery_throttled_waits_total\{domain_class="other",hold="concurrency"\} (\d+)$/m.exec(
      metrics,
    );
    assert.ok(waits && Number(waits[1]) > 0, 'throttled waits counted');
  });
});
