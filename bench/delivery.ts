import { startDnsServer } from '../test/helpers/dns-server.js';
import {
  benchEnv,
  cli,
  cpuSeconds,
  fmt,
  httpLoad,
  median,
  peakRssMb,
  rssMb,
  serve,
  verifiedBenchDomain,
} from './lib.js';
import { postfixWithOpendkim } from './postfix.js';
import { startSink, type Sink } from './smtp-sink.js';

/**
 * Issue 4 target: end to end, messages accepted by POST /v1/emails, DKIM-signed (RSA-2048)
 * and delivered to a loopback sink MX: >= 500 msg/s sustained, memory flat over 50,000
 * messages; Postfix + OpenDKIM on the same machine is the reference (run side by side when
 * installed; BENCH_NO_POSTFIX=1 skips it). BENCH_MESSAGES sets the messages per run
 * (default 5,000; 50000 for the memory target).
 */

export const postMany = (url: string, key: string, body: string, amount: number, connections: number) =>
  httpLoad({
    url: `${url}/v1/emails`,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
    amount,
    connections,
  });

interface RunResult {
  /** Server CPU time per message (all threads): independent of what else the machine runs. */
  cpuMsPerMessage: number | null;
  acceptedPerSecond: number;
  endToEndPerSecond: number;
  rssAt: Array<{ at: number; mb: number }>;
  non2xx: number;
}

async function waitForCount(sink: Sink, target: number, timeoutMs: number, onTick?: () => void): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (sink.count() < target) {
    if (Date.now() > deadline) throw new Error(`sink got ${sink.count()} of ${target} messages in ${timeoutMs} ms`);
    onTick?.();
    await new Promise((r) => setTimeout(r, 100));
  }
  return performance.now();
}

export async function deliveryEndToEnd(options: { runs: number; messages: number }): Promise<void> {
  const { messages, runs } = options;
  const dns = await startDnsServer();
  const sink = await startSink();
  dns.set('sink.bench', 'MX', [{ preference: 10, exchange: 'mx.sink.bench' }]);
  dns.set('mx.sink.bench', 'A', ['127.0.0.1']);
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_PORT: String(sink.port),
    MAILSVC_DELIVERY_HOSTNAME: 'mailsvc-bench.localhost',
    MAILSVC_DELIVERY_CONCURRENCY: '64',
    MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: JSON.stringify({ concurrency: 64, perMinute: 10_000_000 }),
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

  // About 2 KB on the wire, as Postfix's smtp-source -l 2000 below.
  const paragraph =
    '<p>Thank you for your order. Your items will ship within two business days; you will receive a tracking number by email.</p>';
  const body = JSON.stringify({
    from: 'Shop <orders@bench.example>',
    to: 'customer@sink.bench',
    subject: 'Your order has shipped',
    html: paragraph.repeat(6),
  });

  const server = await serve(env);
  const pid = server.process.pid!;
  const results: RunResult[] = [];
  let peak: number | null = null;
  try {
    await postMany(server.url, key, body, 500, 50); // warm-up: JIT, connections to the sink, signing threads
    await waitForCount(sink, 500, 60_000);
    for (let run = 0; run < runs; run++) {
      const base = sink.count();
      const rssAt: RunResult['rssAt'] = [];
      let nextMark = 0;
      const sample = () => {
        const done = sink.count() - base;
        if (done >= nextMark * messages) {
          const mb = rssMb(pid);
          if (mb !== null) rssAt.push({ at: done, mb });
          nextMark += 0.25;
        }
      };
      const cpu0 = cpuSeconds(pid);
      const t0 = performance.now();
      const sending = postMany(server.url, key, body, messages, 50).then((r) => ({ ...r, at: performance.now() }));
      const deliveredAt = await waitForCount(sink, base + messages, 30 * 60_000, sample);
      const accepted = await sending;
      sample();
      const cpu1 = cpuSeconds(pid);
      results.push({
        cpuMsPerMessage: cpu0 !== null && cpu1 !== null ? ((cpu1 - cpu0) * 1000) / messages : null,
        acceptedPerSecond: messages / ((accepted.at - t0) / 1000),
        endToEndPerSecond: messages / ((deliveredAt - t0) / 1000),
        rssAt,
        non2xx: accepted.non2xx + accepted.errors,
      });
    }
    peak = peakRssMb(pid);
  } finally {
    await server.stop();
  }

  console.log(
    `delivery end to end (POST /v1/emails -> queue -> DKIM RSA-2048 -> SMTP to a loopback ${sink.kind}), ${runs} x ${fmt(messages)} messages, 50 HTTP connections`,
  );
  for (const r of results) {
    console.log(
      `  run: accepted ${fmt(r.acceptedPerSecond)} msg/s, delivered end to end ${fmt(r.endToEndPerSecond)} msg/s, non-2xx ${r.non2xx}; server CPU ${r.cpuMsPerMessage === null ? '?' : fmt(r.cpuMsPerMessage, 2)} ms/msg; RSS ${r.rssAt.map((s) => `${fmt(s.mb)} MB @${fmt(s.at)}`).join(', ')}`,
    );
  }
  const e2e = median(results.map((r) => r.endToEndPerSecond));
  console.log(`  median: ${fmt(e2e)} msg/s end to end (target >= 500); server peak RSS ${fmt(peak ?? 0)} MB`);

  // BENCH_NO_POSTFIX=1 skips the reference run.
  const postfix = process.env.BENCH_NO_POSTFIX ? null : await postfixWithOpendkim({ messages, runs, sink });
  if (postfix === null) {
    console.log(
      process.env.BENCH_NO_POSTFIX
        ? '  Postfix + OpenDKIM: skipped (BENCH_NO_POSTFIX)'
        : '  Postfix + OpenDKIM: not installed (apt-get install postfix opendkim opendkim-tools; needs root), no reference run',
    );
  } else {
    console.log(
      `postfix + opendkim milter (RSA-2048, relaxed/relaxed), smtp-source -s 20 -l 2000 -> postfix -> same ${sink.kind}, ${runs} x ${fmt(messages)} messages`,
    );
    for (const r of postfix.runs) console.log(`  run: ${fmt(r)} msg/s end to end`);
    console.log(`  median: ${fmt(postfix.median)} msg/s; mailsvc / postfix = ${fmt(e2e / postfix.median, 2)}`);
  }
  await sink.stop();
  await dns.close();
}
