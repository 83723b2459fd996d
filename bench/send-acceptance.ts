import { SQLite } from '../src/store/infra/sqlite-driver.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { benchEnv, cli, cpuSeconds, fmt, httpLoad, median, peakRssMb, serve, verifiedBenchDomain } from './lib.js';

/**
 * Issue 3 target: POST /v1/emails (small html, durable on SQLite) at >= 1,000 requests/s with
 * p99 < 50 ms at 50 connections. The server runs as its own process with delivery off, so the
 * figure is acceptance alone; the load comes from autocannon in another process.
 */
export async function sendAcceptance(options: { seconds: number; runs: number }): Promise<void> {
  const dns = await startDnsServer();
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_ENABLED: 'false',
    MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
  });
  const { key } = JSON.parse(await cli(['keys', 'create', '--name', 'bench', '--json'], env));
  await verifiedBenchDomain(env, dns);

  const server = await serve(env);
  let accepted = 0;
  try {
    const body = JSON.stringify({
      from: 'Bench <hello@bench.example>',
      to: 'someone@example.org',
      subject: 'Your receipt',
      html: '<p>Thank you for your order.</p>',
    });
    const load = (seconds: number) =>
      httpLoad({
        url: `${server.url}/v1/emails`,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
        connections: 50,
        seconds,
      });
    const warm = await load(2);
    accepted += warm.requests - warm.non2xx;
    const results = [];
    for (let i = 0; i < options.runs; i++) {
      const cpu0 = cpuSeconds(server.process.pid!);
      const r = await load(options.seconds);
      accepted += r.requests - r.non2xx;
      const cpu1 = cpuSeconds(server.process.pid!);
      // CPU per request does not depend on how busy the machine is; it bounds one core's rate.
      results.push({ ...r, cpuMs: cpu0 !== null && cpu1 !== null ? ((cpu1 - cpu0) * 1000) / r.requests : null });
    }
    const rps = median(results.map((r) => r.perSecond));
    const p99 = median(results.map((r) => r.p99));
    console.log(
      `send acceptance (POST /v1/emails, SQLite synchronous=FULL, 50 connections, ${options.runs} x ${options.seconds} s)`,
    );
    for (const r of results) {
      const cpu = r.cpuMs === null ? '?' : `${fmt(r.cpuMs, 2)} ms (${fmt(1000 / r.cpuMs)} req/s per core)`;
      console.log(
        `  run: ${fmt(r.perSecond)} req/s, p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, non-2xx ${r.non2xx}, errors ${r.errors}; server CPU per request ${cpu}`,
      );
    }
    console.log(
      `  median: ${fmt(rps)} req/s, p99 ${fmt(p99, 1)} ms (target >= 1,000 req/s, p99 < 50 ms); server peak RSS ${fmt(peakRssMb(server.process.pid!) ?? 0)} MB`,
    );
  } finally {
    await server.stop();
    await dns.close();
  }
  // Every 2xx must be a row on disk: read the database the stopped server left behind.
  const db = new SQLite(env.MAILSVC_DATABASE!.slice('sqlite:'.length), { readonly: true });
  const { n } = db.prepare('SELECT count(*) AS n FROM emails').get() as { n: number };
  db.close();
  console.log(
    `  durable: ${fmt(n)} emails in the database for ${fmt(accepted)} 2xx answers${n >= accepted ? '' : ' (MISSING MESSAGES)'}`,
  );
}
