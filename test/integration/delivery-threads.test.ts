import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startSink, type Sink } from '../../bench/smtp-sink.js';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { queueEmail } from '../helpers/mail.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Issue 23: delivery runs on threads of its own (delivery.workers), off the main event loop
 * that keeps HTTP and SMTP intake; a thread that dies has its claims given back at once and is
 * replaced.
 */
describe('delivery threads', () => {
  const SENDER = 'sender.test';

  describe('off the main thread', () => {
    let dns: TestDns;
    let sink: Sink;
    let server: TestServer;

    before(async () => {
      dns = await startDnsServer();
      // The MX is a process of its own: nothing of the delivery path lives on this thread.
      sink = await startSink();
      server = await startTestServer({
        delivery: {
          dnsServers: [dns.server],
          relay: { host: '127.0.0.1', port: sink.port },
          workers: 1,
          defaultDomainLimit: { concurrency: 10, perMinute: 1_000_000 },
        },
        webhooks: { enabled: false },
        dkim: { host: 'dkim.mailsvc.test' },
      });
      await addVerifiedDomain(server, dns, SENDER);
    });
    after(async () => {
      await server.close();
      await sink.stop();
      await dns.close();
    });

    it("delivers while the main thread is busy: the claims are the thread's, and attempts are made while the main loop cannot run", async (t) => {
      const db = server.runtime.store.db;
      const threads = server.workers.deliveryThreads;
      assert.ok(threads, 'delivery runs on threads');
      await eventually(async () => threads.owners().length === 1 || undefined, 120_000, 'the delivery thread ready');
      const [owner] = threads.owners();
      assert.notEqual(owner, server.workers.kernel.owner, 'the thread claims under its own lease owner');
      // One message first: the thread has its SMTP connection and signing thread up.
      await queueEmail(db, { workspaceId: server.workspaceId, domain: SENDER, to: ['warm@dest.test'] });
      await eventually(
        async () => (await db.selectFrom('delivery_attempts').select('id').executeTakeFirst()) ?? undefined,
        120_000,
        'the first delivery',
      );
      // Queued for later, then made due in a moment, in one statement: they become due while
      // this thread (the server's main event loop) is held, however long queueing took.
      const later = Date.now() + 3_600_000;
      for (let i = 0; i < 200; i++)
        await queueEmail(db, { workspaceId: server.workspaceId, domain: SENDER, to: [`r${i}@dest.test`], now: later });
      const due = Date.now() + 200;
      await db.updateTable('queue_items').set({ next_attempt_at: due }).where('next_attempt_at', '=', later).execute();
      while (Date.now() - due < 1500) {
        // busy: nothing on the main loop runs
      }
      const until = Date.now();
      const during = await db
        .selectFrom('delivery_attempts')
        .select('id')
        .where('started_at', '>=', due)
        .where('started_at', '<', until)
        .execute();
      t.diagnostic(
        `${during.length} of 200 attempts started while the main thread was busy (${until - due} ms after they became due)`,
      );
      assert.ok(during.length > 0, 'delivery went on while the main thread could not run');
      await eventually(
        async () => {
          const n = await db
            .selectFrom('queue_items')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('status', '=', 'delivered')
            .executeTakeFirstOrThrow();
          return Number(n.n) === 201 || undefined;
        },
        30_000,
        'every message delivered',
      );
      // The statement counter of /metrics adds the thread's statements (claims, loads, records) to the main thread's own.
      const counted = async () =>
        Number(
          /^mailsvc_db_statements_total (\d+)$/m.exec(await (await fetch(`${server.httpUrl}/metrics`)).text())?.[1],
        );
      await eventually(
        async () => ((await counted()) > server.runtime.store.statements() + 201 ? true : undefined),
        5000,
        "the thread's statements in /metrics",
      );
      // Memory per isolate: the main thread's, the delivery thread's and its signing thread's
      // (each reports its own; Node 20 cannot read a worker's heap from outside).
      const memory = async () => {
        const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
        const m = new Map<string, number>();
        for (const x of text.matchAll(
          /^mailsvc_(?:thread|process)_memory_bytes\{(?:thread="([^"]+)",)?kind="([^"]+)"\} (\S+)$/gm,
        ))
          m.set(`${x[1] ?? 'process'} ${x[2]}`, Number(x[3]));
        return m;
      };
      const m = await eventually(
        async () => ((await memory()).has('delivery-0-pool-0 heap_used') ? memory() : undefined),
        5000,
        "the signing thread's memory in /metrics",
      );
      for (const thread of ['main', 'delivery-0', 'delivery-0-pool-0']) {
        const used = m.get(`${thread} heap_used`)!;
        assert.ok(
          used > 1e6 && used <= m.get(`${thread} heap_total`)!,
          `${thread}: heap used ${used} within its total`,
        );
        assert.ok(
          m.get(`${thread} heap_young`)! > 0 && m.get(`${thread} heap_young`)! < m.get(`${thread} heap_total`)!,
          `${thread}: a young generation`,
        );
        assert.ok(m.get(`${thread} heap_limit`)! > m.get(`${thread} heap_total`)!, `${thread}: under its limit`);
        assert.ok(
          m.get(`${thread} external`)! >= m.get(`${thread} array_buffers`)!,
          `${thread}: array buffers are part of external memory`,
        );
      }
      // Sized by delivery.threadMemory and delivery.signingThreadMemory (V8's limit is old + young).
      const { threadMemory, signingThreadMemory } = server.runtime.config.delivery;
      assert.equal(m.get('delivery-0 heap_limit'), (threadMemory.heapMb + threadMemory.youngGenerationMb) * 2 ** 20);
      assert.equal(
        m.get('delivery-0-pool-0 heap_limit'),
        (signingThreadMemory.heapMb + signingThreadMemory.youngGenerationMb) * 2 ** 20,
      );
      const isolates = ['main', 'delivery-0', 'delivery-0-pool-0'].reduce(
        (sum, t) => sum + m.get(`${t} heap_total`)! + m.get(`${t} external`)!,
        0,
      );
      assert.ok(m.get('process rss')! > isolates, 'the process holds every isolate');
      assert.ok(
        m.get('process native')! > 0 && m.get('process native')! < m.get('process rss')!,
        'native: what RSS holds beyond the isolates',
      );
      assert.ok(
        m.get('process peak_rss')! >= m.get('process rss')! * 0.9,
        'the peak is at least about what is held now',
      );
    });
  });

  describe('a thread that dies', () => {
    let dns: TestDns;
    let mx: TestMx;
    let server: TestServer;

    before(async () => {
      dns = await startDnsServer();
      // One transaction at a time, each answered after 300 ms: most claimed mail waits in the gate.
      mx = await startMxServer({ hooks: { onData: () => new Promise((r) => setTimeout(() => r(undefined), 300)) } });
      server = await startTestServer({
        delivery: {
          dnsServers: [dns.server],
          port: mx.port,
          workers: 1,
          defaultDomainLimit: { concurrency: 1, perMinute: 1_000_000 },
          mtaSts: false,
        },
        webhooks: { enabled: false },
        dkim: { host: 'dkim.mailsvc.test' },
      });
      await addVerifiedDomain(server, dns, SENDER);
      routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    });
    after(async () => {
      await server.close();
      await mx.close();
      await dns.close();
    });

    it('has its claims given back at once and is replaced; every message arrives, at most the one in flight twice', async () => {
      const db = server.runtime.store.db;
      const threads = server.workers.deliveryThreads!;
      await eventually(async () => threads.owners().length === 1 || undefined, 120_000, 'the delivery thread ready');
      const [dead] = threads.owners();
      const emails = new Map<string, string>();
      for (let i = 0; i < 30; i++) {
        const email = await queueEmail(db, {
          workspaceId: server.workspaceId,
          domain: SENDER,
          to: [`r${i}@dest.test`],
        });
        emails.set(email.message_id, email.id);
      }
      const ids = [...emails.keys()];
      const heldBy = async (owner: string) =>
        Number(
          (
            await db
              .selectFrom('queue_items')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('status', '=', 'sending')
              .where('lease_owner', '=', owner)
              .executeTakeFirstOrThrow()
          ).n,
        );
      await eventually(
        async () => (await heldBy(dead!)) >= 10 || undefined,
        120_000,
        'claimed mail waiting for the slot',
      );
      await threads.kill(0);
      // What the MX had accepted when the thread died, and what of it the thread had recorded
      // (nothing more can be: its connection is gone). Accepted but unrecorded results were
      // waiting for their group commit (a 20 ms window): at-least-once sends those again.
      const accepted = new Set(mx.messages.map((m) => m.messageId!));
      const recorded = new Set(
        (await db.selectFrom('queue_items').select('email_id').where('status', '=', 'delivered').execute()).map(
          (r) => r.email_id,
        ),
      );
      const unrecorded = [...accepted].filter((id) => !recorded.has(emails.get(id)!));
      // Given back at once, not when the 30 s lease runs out.
      await eventually(
        async () => (await heldBy(dead!)) === 0 || undefined,
        5000,
        "the dead thread's claims given back",
      );
      await eventually(
        async () => (threads.owners().length === 1 && threads.owners()[0] !== dead) || undefined,
        120_000,
        'a new thread',
      );
      await eventually(
        async () => ids.every((id) => mx.messages.some((m) => m.messageId === id)) || undefined,
        60_000,
        'every message at the MX',
      );
      const counts = new Map<string, number>();
      for (const m of mx.messages) counts.set(m.messageId!, (counts.get(m.messageId!) ?? 0) + 1);
      const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
      // Sent again: what was accepted but unrecorded, and at most the one transaction in
      // flight (concurrency 1). Nothing recorded as delivered is ever sent again.
      const again = twice.filter((id) => !unrecorded.includes(id));
      assert.ok(
        again.length <= 1,
        `only the transaction in flight at the crash may be sent again beside ${unrecorded.length} unrecorded (${again.length} more sent twice)`,
      );
      assert.ok(
        twice.every((id) => !recorded.has(emails.get(id)!)),
        'nothing recorded as delivered is sent again',
      );
    });
  });
});
