import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Clock } from '../../src/shared/clock.js';
import { runCliProcess } from '../helpers/cli.js';
import { routeDomain } from '../helpers/delivery.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { queueEmail } from '../helpers/mail.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A clock that runs SPEED times faster than real time and moves on by a millisecond at every
 * read, so that time passes between any two reads of one decision (as it does on a loaded
 * machine): the delivery gate once gave no slot and set no timer when a token became
 * available between its two reads, and mail to the domain stopped for good.
 */
function racingClock(speed: number): Clock & { elapsed(): number } {
  const start = Date.now();
  const realStart = performance.now();
  let reads = 0;
  return {
    now: () => start + Math.floor((performance.now() - realStart) * speed) + ++reads,
    elapsed: () => Math.floor((performance.now() - realStart) * speed) + reads,
  };
}

/**
 * Issue 22, defect 1: more mail than a destination's limit allows, kept waiting for several
 * minutes of the injected clock, leaves at the limit's rate for as long as it waits. Fails
 * within a minute or two of the clock on the gate that lost its timer.
 */
describe('delivery: a destination over its limit keeps its rate', () => {
  const SENDER = 'sender.test';
  const PER_MINUTE = 600;
  const SPEED = 3;
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  const clock = racingClock(SPEED);

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    server = await startTestServer(
      {
        delivery: {
          enabled: true,
          dnsServers: [dns.server],
          port: mx.port,
          hostname: 'mta.mailsvc.test',
          defaultDomainLimit: { concurrency: 10, perMinute: PER_MINUTE },
          signingThreads: 0,
        },
        webhooks: { enabled: false },
        dkim: { host: 'dkim.mailsvc.test' },
      },
      { clock },
    );
    await addVerifiedDomain(server, dns, SENDER);
    routeDomain(dns, 'busy.test', [{ name: 'mx.busy.test', preference: 10, a: ['127.0.0.1'] }]);
  });
  after(async () => {
    await server.close();
    await mx.close();
    await dns.close();
  });

  it('delivers at the limit through three minutes of the clock, never stopping', async (t) => {
    const db = server.runtime.store.db;
    // More than three minutes at the limit can carry: mail waits for the whole test.
    const offered = 5 * PER_MINUTE;
    for (let i = 0; i < offered; i++) await queueEmail(db, { workspaceId: server.workspaceId, domain: SENDER, to: [`user${i}@busy.test`], now: clock.now() });
    const t0 = clock.elapsed();
    const base = mx.messages.length;
    // Deliveries in each simulated 30-second window, for three minutes (bounded in real time).
    const windows: number[] = [];
    let last = base;
    const realDeadline = Date.now() + 120_000;
    while (windows.length < 6 && Date.now() < realDeadline) {
      await new Promise((r) => setTimeout(r, 25));
      if (clock.elapsed() - t0 >= (windows.length + 1) * 30_000) {
        windows.push(mx.messages.length - last);
        last = mx.messages.length;
      }
    }
    t.diagnostic(`deliveries per 30 s of the clock: ${windows.join(', ')}`);
    assert.equal(windows.length, 6, `three minutes of the clock passed in time (windows: ${windows.join(', ')})`);
    const perWindow = PER_MINUTE / 2;
    // The bucket holds 5 s worth: a window may carry a little more than its share, never much less.
    for (const [i, n] of windows.entries()) {
      assert.ok(n >= perWindow * 0.7, `window ${i + 1} delivered ${n}, expected about ${perWindow} (windows: ${windows.join(', ')})`);
      assert.ok(n <= perWindow + Math.ceil((PER_MINUTE * 5) / 60) + 1, `window ${i + 1} delivered ${n}: over the limit (windows: ${windows.join(', ')})`);
    }
    const waiting = await db.selectFrom('queue_items').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', ['queued', 'sending']).executeTakeFirstOrThrow();
    assert.ok(Number(waiting.n) > 0, 'mail was still waiting at the end: the load stayed over the limit');
  });

  it('shows the destination\'s gate in /metrics and in `mailsvc queue list`', async () => {
    const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
    const gauge = (name: string) => Number(new RegExp(`^${name}\\{domain_class="other"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    assert.equal(gauge('mailsvc_delivery_destination_allowed'), 10);
    assert.ok(gauge('mailsvc_delivery_destination_waiting') > 0, 'claimed mail waits for its slot');
    // The CLI is another process: it sees what the server's gate reported to the database.
    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const listed = await runCliProcess(['queue', 'list', '--json', '--limit', '5'], env);
    assert.equal(listed.code, 0, listed.stderr);
    const { destinations, items } = JSON.parse(listed.stdout) as { destinations: Array<{ domain: string; allowed: number; waiting: number; hold: string | null }>; items: Array<{ status: string; waiting: string }> };
    const busy = destinations.find((d) => d.domain === 'busy.test');
    assert.ok(busy, `busy.test reported: ${listed.stdout.slice(0, 300)}`);
    assert.equal(busy.allowed, 10);
    // Waiting for its per-minute limit (or, the moment a token came, about to start the next; on
    // a loaded machine transactions last long enough that all ten slots can be busy too).
    assert.ok(busy.waiting > 0 && [null, 'rate', 'concurrency'].includes(busy.hold), `waiting at its limits: ${JSON.stringify(busy)}`);
    const text = await runCliProcess(['queue', 'list', '--limit', '3'], env);
    assert.match(text.stdout, /^DESTINATION\s+RUNNING\s+ALLOWED\s+WAITING\s+STATE$/m);
    assert.match(text.stdout, /^busy\.test\s+\d+\s+10\s+\d+\s+(at its per-minute limit|starting the next|every slot busy)/m);
    assert.ok(items.length > 0);
  });
});
