import { startDnsServer } from '../test/helpers/dns-server.js';
import { postMany } from './delivery.js';
import { benchEnv, cli, fmt, median, openLoopLoad, serve, verifiedBenchDomain, type OpenLoopResult } from './lib.js';
import { waitForSink } from './postfix.js';
import { startSink } from './smtp-sink.js';

/**
 * Issue 14: POST /v1/emails latency while delivery runs beside it, as users run the product.
 * Open-loop load (bench/open-loop-process.ts: each request due at a fixed time, latency from
 * that time, so queueing shows) at 300 and 500 req/s for BENCH_SECONDS (default 30) each,
 * BENCH_RUNS times; every accepted message is delivered DKIM-signed to a loopback sink
 * during the run. Target: p99 < 50 ms at 500 req/s. Shipped defaults except the destination
 * limit (concurrency 20, no rate cap, as Postfix).
 */
export async function apiLatency(options: { seconds: number; runs: number; rates: number[] }): Promise<void> {
  const dns = await startDnsServer();
  const sink = await startSink();
  dns.set('sink.bench', 'MX', [{ preference: 10, exchange: 'mx.sink.bench' }]);
  dns.set('mx.sink.bench', 'A', ['127.0.0.1']);
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_PORT: String(sink.port),
    MAILSVC_DELIVERY_HOSTNAME: 'mailsvc-bench.localhost',
    MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: JSON.stringify({ concurrency: 20, perMinute: 10_000_000 }),
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
  const body = JSON.stringify({
    from: 'Shop <orders@bench.example>',
    to: 'customer@sink.bench',
    subject: 'Your order has shipped',
    html: paragraph.repeat(6),
  });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  const server = await serve(env);
  const results = new Map<number, Array<OpenLoopResult & { deliveredDuring: number }>>();
  try {
    await postMany(server.url, key, body, 500, 20); // warm-up: JIT, connections to the sink, signing threads
    await waitForSink(sink, 500, 120_000);
    for (let run = 0; run < options.runs; run++) {
      for (const rate of options.rates) {
        const base = sink.count();
        const r = await openLoopLoad({
          url: `${server.url}/v1/emails`,
          method: 'POST',
          headers,
          body,
          rate,
          seconds: options.seconds,
        });
        const deliveredDuring = sink.count() - base;
        // Let delivery catch up before the next load, so runs do not start with a backlog.
        await waitForSink(sink, base + r.completed - r.non2xx - r.errors, 10 * 60_000);
        results.set(rate, [...(results.get(rate) ?? []), { ...r, deliveredDuring }]);
      }
    }
  } finally {
    await server.stop();
    await sink.stop();
    await dns.close();
  }

  console.log(
    `API latency with delivery running (POST /v1/emails, open loop: fixed rate, latency from when each request was due; ${options.runs} x ${options.seconds} s per rate; delivery DKIM RSA-2048 to a loopback ${sink.kind})`,
  );
  for (const [rate, runs] of results) {
    for (const r of runs) {
      console.log(
        `  ${rate} req/s run: achieved ${fmt(r.achieved)} req/s, p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, p99.9 ${fmt(r.p999, 1)} ms, max ${fmt(r.max)} ms; non-2xx ${r.non2xx}, errors ${r.errors}; delivered during the load ${fmt(r.deliveredDuring)}`,
      );
    }
    const m = (f: (r: OpenLoopResult) => number) => median(runs.map(f));
    console.log(
      `  ${rate} req/s median: achieved ${fmt(m((r) => r.achieved))} req/s, p50 ${fmt(
        m((r) => r.p50),
        1,
      )} ms, p99 ${fmt(
        m((r) => r.p99),
        1,
      )} ms, p99.9 ${fmt(
        m((r) => r.p999),
        1,
      )} ms${rate === 500 ? ' (target p99 < 50 ms)' : ''}`,
    );
  }
}
