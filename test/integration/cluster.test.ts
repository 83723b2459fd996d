import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Served } from '../helpers/cli.js';
import { allArrived } from '../helpers/delivery.js';
import { request, show } from '../helpers/http.js';
import type { ReceivedMessage, TestMx } from '../helpers/mx-server.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { startServeRig, type ServeRig } from '../helpers/serve-rig.js';

/**
 * Two `mailsvc serve` processes on one PostgreSQL database, as behind a load balancer: they
 * share the queue (each message reaches the MX once), the idempotency keys (409 across nodes)
 * and, after kill -9 of one, the survivor delivers what the dead one held.
 *
 * Nodes a and b run with the default 30 s lease: on a loaded machine a node stalled past a
 * short lease (5 s) while its SMTP transaction completed has the other node take the row over
 * and send it again (at least once, by design), which the exactly-once check would fail on
 * for a reason this test is not about. Only node c, killed in the last part, runs on a 5 s
 * lease so that its mail is taken over quickly; c never completes a transaction (its DATA is
 * held), so its short lease cannot make a duplicate.
 */
describe(
  'two nodes on one PostgreSQL database',
  { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' },
  () => {
    let rig: ServeRig;
    let files: Server;
    let releaseFile: () => void = () => {};
    let fileRequested: () => void = () => {};
    let key: string;
    let mx: TestMx;

    const serve = (name: string): Promise<Served> => rig.serve(name);

    const send = (url: string, to: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
      request(url, 'POST', '/v1/emails', {
        key,
        headers,
        body: { from: 'Shop <hello@sender.test>', to, subject: 'Order confirmation', html: '<p>Thanks!</p>', ...extra },
      });

    /** Waits until the MX holds every id in `expected`; returns how often each arrived. */
    const arrivals = async (expected: Set<string>, timeoutMs: number): Promise<Map<string, number>> => {
      await allArrived(mx, expected, timeoutMs);
      const counts = new Map<string, number>();
      for (const m of mx.messages)
        if (expected.has(m.messageId!)) counts.set(m.messageId!, (counts.get(m.messageId!) ?? 0) + 1);
      return counts;
    };

    before(async () => {
      rig = await startServeRig({
        name: 'cluster',
        deliver: {},
        env: {
          MAILSVC_DELIVERY_RETRY_SCHEDULE: '[1]',
          MAILSVC_DELIVERY_POLL_INTERVAL: '100',
          MAILSVC_DELIVERY_CONCURRENCY: '8',
          MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: '{"concurrency":16,"perMinute":100000}',
          MAILSVC_DELIVERY_SIGNING_THREADS: '0',
          MAILSVC_ATTACHMENTS_ALLOW_PRIVATE_NETWORKS: 'true',
        },
      });
      ({ key, mx } = rig);
      // An attachment server that answers only when told: it holds a request in flight.
      files = createServer((_req, res) => {
        fileRequested();
        releaseFile = () => res.end('%PDF-1.4 held');
      });
      await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
      rig.dns.set('files.sender.test', 'A', ['127.0.0.1']);
    });
    after(async () => {
      files?.closeAllConnections();
      await new Promise((r) => files?.close(r));
      await rig?.close();
    });

    it('delivers 2,000 emails sent through both nodes, each exactly once; holds the idempotency 409 across nodes; survives kill -9 of a node', async (t) => {
      const a = await serve('a');
      const b = await serve('b');

      // 2,000 emails, alternating between the nodes, 20 requests at a time.
      const total = 2000;
      const ids = new Set<string>();
      let next = 0;
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          while (next < total) {
            const i = next++;
            const res = await send(i % 2 === 0 ? a.url : b.url, `r${i}@dest.test`);
            assert.equal(res.status, 200, show(res));
            ids.add(`<${res.body.id}@sender.test>`);
          }
        }),
      );
      assert.equal(ids.size, total);
      const counts = await arrivals(ids, 120_000);
      assert.equal(counts.size, total);
      assert.deepEqual(
        [...counts.values()].filter((c) => c !== 1),
        [],
        'no message arrived twice',
      );
      const byNode = (name: string) =>
        mx.messages.filter((m) => ids.has(m.messageId!) && m.ehlo === `mta-${name}.mailsvc.test`).length;
      t.diagnostic(`delivered by node a: ${byNode('a')}, by node b: ${byNode('b')}`);
      assert.ok(byNode('a') > 0 && byNode('b') > 0, 'both nodes delivered');

      // Idempotency across nodes: the first request holds its key while its attachment is fetched.
      const requested = new Promise<void>((r) => (fileRequested = r));
      const body = {
        attachments: [
          {
            filename: 'r.pdf',
            path: `http://files.sender.test:${(files.address() as AddressInfo).port}/r.pdf`,
            content_type: 'application/pdf',
          },
        ],
      };
      const first = send(a.url, 'idem@dest.test', body, { 'Idempotency-Key': 'cluster-1' });
      await requested;
      const concurrent = await send(b.url, 'idem@dest.test', body, { 'Idempotency-Key': 'cluster-1' });
      assert.equal(concurrent.status, 409, show(concurrent));
      assert.equal(concurrent.body.error.code, 'concurrent_idempotent_requests');
      releaseFile();
      const done = await first;
      assert.equal(done.status, 200, show(done));
      const replay = await send(b.url, 'idem@dest.test', body, { 'Idempotency-Key': 'cluster-1' });
      assert.equal(replay.status, 200, show(replay));
      assert.equal(replay.body.id, done.body.id, 'the other node replays the stored response');

      // kill -9: node a stops (giving back what it holds); node c joins on a 5 s lease. c's
      // messages are held at DATA (never answered), so c is mid-delivery with leases it will
      // never finish; node b's are accepted.
      assert.equal(await a.stop(), 0);
      const c = await rig.serve('c', { MAILSVC_DELIVERY_LEASE_SECONDS: '5' });
      const held: Array<() => void> = [];
      let holding: () => void = () => {};
      const cHolds = new Promise<void>((r) => (holding = r));
      mx.hooks = {
        onData: (m: ReceivedMessage) =>
          m.ehlo === 'mta-c.mailsvc.test'
            ? new Promise((resolve) => {
                held.push(() => resolve({ code: 451, text: '4.3.0 released after the test' }));
                holding();
              })
            : undefined,
      };
      const second = new Set<string>();
      for (let i = 0; i < 100; i++) {
        const res = await send(i % 2 === 0 ? c.url : b.url, `k${i}@dest.test`);
        assert.equal(res.status, 200, show(res));
        second.add(`<${res.body.id}@sender.test>`);
      }
      await cHolds;
      await c.kill();
      const heldByDead = await rig.runtime.store.db
        .selectFrom('queue_items')
        .select('id')
        .where('status', '=', 'sending')
        .where('lease_owner', 'is not', null)
        .execute();
      const afterKill = await arrivals(second, 60_000);
      assert.equal(afterKill.size, second.size);
      assert.deepEqual(
        [...afterKill.values()].filter((c) => c !== 1),
        [],
        'no message arrived twice',
      );
      t.diagnostic(
        `kill -9: ${held.length} message(s) held at DATA by node c, ${heldByDead.length} row(s) leased when it died, all delivered by node b`,
      );
      for (const release of held) release();

      assert.equal(await b.stop(), 0);
    });
  },
);
