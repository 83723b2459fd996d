import { startDnsServer } from '../test/helpers/dns-server.js';
import { postMany } from './delivery.js';
import {
  benchEnv,
  cli,
  cpuSeconds,
  fmt,
  freePort,
  httpLoad,
  median,
  metricOf,
  serve,
  statementsOf,
  verifiedBenchDomain,
} from './lib.js';
import { startPostfix, waitForSink } from './postfix.js';
import { startSink, type Sink } from './smtp-sink.js';

/**
 * Issue 14: a backlog drains at full speed. N messages (BENCH_BACKLOG, default 5,000; the
 * issue's figure is 50,000) are accepted by POST /v1/emails/batch while the destination's MX
 * is down (nothing listens on the sink's port: every first attempt is deferred); then the
 * sink opens and `mailsvc queue retry --all` makes the deferred rows due, as an operator (or
 * the retry schedule) would after an outage. The clock runs from the retry to the last
 * message at the sink. In the same run: the product's steady-stream rate (N messages POSTed
 * with the sink open, end to end), and Postfix (plain relay: with OpenDKIM it signs at
 * intake, so its drain is the same) given the same N with `defer_transports = smtp`, then
 * `postqueue -f`. Shipped defaults except the destination limit (concurrency 20, no rate cap,
 * as Postfix) and a one-hour first retry (so that rows are not retried while the backlog
 * builds). Targets: >= 700 msg/s and >= 0.9 x the steady-stream rate.
 */
export async function backlog(options: { messages: number; runs: number }): Promise<void> {
  const { messages, runs } = options;
  const dns = await startDnsServer();
  dns.set('sink.bench', 'MX', [{ preference: 10, exchange: 'mx.sink.bench' }]);
  dns.set('mx.sink.bench', 'A', ['127.0.0.1']);
  const sinkPort = await freePort();
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_PORT: String(sinkPort),
    MAILSVC_DELIVERY_HOSTNAME: 'mailsvc-bench.localhost',
    MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: JSON.stringify({ concurrency: 20, perMinute: 10_000_000 }),
    MAILSVC_DELIVERY_RETRY_SCHEDULE: '[3600]',
    MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
    MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
  });
  const { key } = JSON.parse(await cli(['keys', 'create', '--name', 'bench', '--json'], env));
  const [workspace] = JSON.parse(await cli(['workspaces', 'list', '--json'], env));
  await cli(
    ['workspaces', 'set-plan', workspace.id, 'enterprise', '--transactional', '1000000', '--marketing', '1000000'],
    env,
  );
  await verifiedBenchDomain(env, dns);
  const paragraph =
    '<p>Thank you for your order. Your items will ship within two business days; you will receive a tracking number by email.</p>';
  const one = {
    from: 'Shop <orders@bench.example>',
    to: 'customer@sink.bench',
    subject: 'Your order has shipped',
    html: paragraph.repeat(6),
  };
  const batch = JSON.stringify(Array.from({ length: 100 }, () => one));

  const server = await serve(env);
  const drains: Array<{ perSecond: number; statementsPerMessage: number; cpuMs: number }> = [];
  const steady: number[] = [];
  let sink: Sink | null = null;
  try {
    for (let run = 0; run < runs; run++) {
      // The MX is down: queue N, wait until each has had its first (failed) attempt.
      const deferredBefore = await metricOf(server.url, 'mailsvc_delivery_attempts_total', { outcome: 'deferred' });
      const queued = await httpLoad({
        url: `${server.url}/v1/emails/batch`,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: batch,
        amount: Math.ceil(messages / 100),
        connections: 4,
      });
      if (queued.non2xx + queued.errors > 0)
        throw new Error(`queueing the backlog: ${queued.non2xx} non-2xx, ${queued.errors} errors`);
      const total = Math.ceil(messages / 100) * 100;
      for (let i = 0; i < 6000; i++) {
        if (
          (await metricOf(server.url, 'mailsvc_delivery_attempts_total', { outcome: 'deferred' })) - deferredBefore >=
          total
        )
          break;
        await new Promise((r) => setTimeout(r, 100));
      }
      // The MX comes back; the operator retries the queue.
      sink = await startSink(sinkPort);
      const base = sink.count();
      const s0 = await statementsOf(server.url);
      const c0 = cpuSeconds(server.process.pid!) ?? 0;
      const t0 = performance.now();
      await cli(['queue', 'retry', '--all', '--json'], env);
      const done = await waitForSink(sink, base + total);
      const s1 = await statementsOf(server.url);
      const c1 = cpuSeconds(server.process.pid!) ?? 0;
      drains.push({
        perSecond: total / ((done - t0) / 1000),
        statementsPerMessage: (s1 - s0) / total,
        cpuMs: ((c1 - c0) * 1000) / total,
      });

      // Steady stream: the same N, POSTed one by one (50 connections) with the MX up.
      const sBase = sink.count();
      const t1 = performance.now();
      const sent = postMany(server.url, key, JSON.stringify(one), total, 50);
      const sDone = await waitForSink(sink, sBase + total);
      await sent;
      steady.push(total / ((sDone - t1) / 1000));
      await sink.stop();
      sink = null;
    }
  } finally {
    await sink?.stop();
    await server.stop();
  }

  const total = Math.ceil(messages / 100) * 100;
  console.log(
    `backlog drain: ${fmt(total)} messages deferred while the MX was down, then \`mailsvc queue retry --all\` with the MX back; ${runs} runs`,
  );
  for (const [i, d] of drains.entries()) {
    console.log(
      `  run: drained ${fmt(d.perSecond)} msg/s (server CPU ${fmt(d.cpuMs, 2)} ms/msg, all threads; ${fmt(d.statementsPerMessage, 1)} database statements per message); steady stream ${fmt(steady[i]!)} msg/s`,
    );
  }
  const drain = median(drains.map((d) => d.perSecond));
  const stream = median(steady);
  console.log(
    `  median: drain ${fmt(drain)} msg/s (target >= 700), steady stream ${fmt(stream)} msg/s; drain / steady = ${fmt(drain / stream, 2)} (target >= 0.9)`,
  );

  if (process.env.BENCH_NO_POSTFIX) {
    console.log('  Postfix: skipped (BENCH_NO_POSTFIX)');
  } else {
    const pfSink = await startSink();
    const pf = await startPostfix({ sink: pfSink, dkim: false, defer: true });
    if (!pf) console.log('  Postfix: not installed (apt-get install postfix; needs root), no reference run');
    else {
      const rates: number[] = [];
      try {
        for (let run = 0; run < runs; run++) {
          const base = pfSink.count();
          await pf.send(total, { reuse: true });
          for (let i = 0; i < 6000 && pf.deferredCount() < total; i++) await new Promise((r) => setTimeout(r, 100));
          const t0 = performance.now();
          pf.flush();
          const done = await waitForSink(pfSink, base + total);
          rates.push(total / ((done - t0) / 1000));
        }
      } finally {
        await pf.stop();
      }
      const pfMedian = median(rates);
      console.log(
        `postfix, same ${fmt(total)} messages held by defer_transports = smtp, then postqueue -f, to the same kind of sink; ${runs} runs`,
      );
      console.log(
        `  runs: ${rates.map((r) => fmt(r)).join(', ')} msg/s; median ${fmt(pfMedian)} msg/s; mailsvc / postfix = ${fmt(drain / pfMedian, 2)}`,
      );
    }
    await pfSink.stop();
  }
  await dns.close();
}
