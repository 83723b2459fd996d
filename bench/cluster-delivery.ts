import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startDnsServer, type TestDns } from '../test/helpers/dns-server.js';
import { createTestDatabase } from '../test/helpers/postgres.js';
import { postMany } from './delivery.js';
import {
  benchEnv,
  cli,
  cpuSeconds,
  fmt,
  median,
  serve,
  statementsOf,
  type BenchServer,
  verifiedBenchDomain,
} from './lib.js';
import { startSink, type Sink } from './smtp-sink.js';

/**
 * Issue 8: end-to-end delivery (POST /v1/emails -> queue -> DKIM -> loopback sink MX) with
 * 1 node on SQLite, 1 node on PostgreSQL and 2 nodes on one PostgreSQL database, in the
 * same run on the same machine. The PostgreSQL server is BENCH_POSTGRES (default: the one
 * the tests use, postgres://postgres@127.0.0.1:5432/test); each setup gets a fresh database.
 */

interface Setup {
  name: string;
  nodes: number;
  postgres: boolean;
}

const SETUPS: Setup[] = [
  { name: '1 node, SQLite', nodes: 1, postgres: false },
  { name: '1 node, PostgreSQL', nodes: 1, postgres: true },
  { name: '2 nodes, PostgreSQL', nodes: 2, postgres: true },
];

const pgServer = () =>
  process.env.BENCH_POSTGRES ?? process.env.MAILSVC_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * CPU seconds the PostgreSQL server processes serving `url`'s database have used (their
 * backends, from /proc): PostgreSQL shares the cores here, so its cost per message is part of
 * the node's. Backends that ended meanwhile are not counted (the pools keep theirs while busy).
 */
async function postgresCpuSeconds(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: pgServer() });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [
      new URL(url).pathname.slice(1),
    ]);
    return rows.reduce((sum, r) => sum + (cpuSeconds(r.pid) ?? 0), 0);
  } finally {
    await client.end();
  }
}

async function waitForCount(sink: Sink, target: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (sink.count() < target) {
    if (Date.now() > deadline) throw new Error(`sink got ${sink.count()} of ${target} messages in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return performance.now();
}

interface SetupResult {
  runs: number[];
  perSecond: number;
  /** Database statements (round trips on PostgreSQL) per message, every node together, intake and delivery. */
  statementsPerMessage: number;
  /** CPU milliseconds of PostgreSQL's backends per message (null on SQLite). */
  postgresCpuMsPerMessage: number | null;
  /** CPU milliseconds of the mailsvc processes (every thread) per message. */
  nodeCpuMsPerMessage: number;
  non2xx: number;
}

async function runSetup(setup: Setup, dns: TestDns, sink: Sink, messages: number, runs: number): Promise<SetupResult> {
  const database = setup.postgres ? await createTestDatabase(pgServer()) : null;
  // Every node shares the secret key (it unseals the DKIM keys) and has its own hostname.
  const secretKey = randomBytes(32).toString('base64');
  const envFor = (i: number) =>
    benchEnv({
      ...(database ? { MAILSVC_DATABASE: database.url } : {}),
      MAILSVC_SECRET_KEY: secretKey,
      MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
      MAILSVC_DELIVERY_PORT: String(sink.port),
      MAILSVC_DELIVERY_HOSTNAME: `mailsvc-bench-${i}.localhost`,
      MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: JSON.stringify({ concurrency: 20, perMinute: 10_000_000 }),
      MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
      MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
    });
  const envs = Array.from({ length: setup.nodes }, (_, i) => envFor(i));
  const env = envs[0]!;
  const servers: BenchServer[] = [];
  try {
    const { key } = JSON.parse(await cli(['keys', 'create', '--name', 'bench', '--json'], env));
    const [workspace] = JSON.parse(await cli(['workspaces', 'list', '--json'], env));
    await cli(
      ['workspaces', 'set-plan', workspace.id, 'enterprise', '--transactional', '1000000', '--marketing', '1000000'],
      env,
    );
    await verifiedBenchDomain(env, dns);
    for (const e of envs) servers.push(await serve(e));

    const paragraph =
      '<p>Thank you for your order. Your items will ship within two business days; you will receive a tracking number by email.</p>';
    const body = JSON.stringify({
      from: 'Shop <orders@bench.example>',
      to: 'customer@sink.bench',
      subject: 'Your order has shipped',
      html: paragraph.repeat(6),
    });
    // Warm-up on every node: JIT, pools, connections to the sink.
    let base = sink.count();
    await Promise.all(servers.map((s) => postMany(s.url, key, body, 200, 20)));
    await waitForCount(sink, base + 200 * servers.length, 120_000);

    const perNode = Math.ceil(messages / servers.length);
    const rates: number[] = [];
    const statements: number[] = [];
    const pgCpu: number[] = [];
    const nodeCpu: number[] = [];
    const nodesCpu = () => servers.reduce((sum, s) => sum + (cpuSeconds(s.process.pid!) ?? 0), 0);
    let non2xx = 0;
    const statementsNow = async () =>
      (await Promise.all(servers.map((s) => statementsOf(s.url)))).reduce((a, b) => a + b, 0);
    for (let run = 0; run < runs; run++) {
      base = sink.count();
      const s0 = await statementsNow();
      const c0 = database ? await postgresCpuSeconds(database.url) : 0;
      const n0 = nodesCpu();
      const t0 = performance.now();
      // The load balancer's share: the same number of requests to each node at once.
      const sent = Promise.all(servers.map((s) => postMany(s.url, key, body, perNode, Math.ceil(50 / servers.length))));
      const doneAt = await waitForCount(sink, base + perNode * servers.length, 30 * 60_000);
      const results = await sent;
      rates.push((perNode * servers.length) / ((doneAt - t0) / 1000));
      statements.push(((await statementsNow()) - s0) / (perNode * servers.length));
      if (database) pgCpu.push((((await postgresCpuSeconds(database.url)) - c0) * 1000) / (perNode * servers.length));
      nodeCpu.push(((nodesCpu() - n0) * 1000) / (perNode * servers.length));
      non2xx += results.reduce((n, r) => n + r.non2xx + r.errors, 0);
    }
    return {
      runs: rates,
      perSecond: median(rates),
      statementsPerMessage: median(statements),
      postgresCpuMsPerMessage: database ? median(pgCpu) : null,
      nodeCpuMsPerMessage: median(nodeCpu),
      non2xx,
    };
  } finally {
    for (const s of servers) await s.stop();
    await database?.drop();
  }
}

export async function clusterDelivery(options: { messages: number; runs: number }): Promise<void> {
  const dns = await startDnsServer();
  const sink = await startSink();
  dns.set('sink.bench', 'MX', [{ preference: 10, exchange: 'mx.sink.bench' }]);
  dns.set('mx.sink.bench', 'A', ['127.0.0.1']);
  try {
    console.log(
      `cluster delivery end to end (POST /v1/emails -> queue -> DKIM RSA-2048 -> loopback ${sink.kind}), ${options.runs} x ${fmt(options.messages)} messages per setup, 50 HTTP connections split over the nodes; medians`,
    );
    const results = new Map<string, SetupResult>();
    // BENCH_SETUPS=1,2 runs only those (1-based), e.g. the PostgreSQL node alone while profiling it.
    const chosen = process.env.BENCH_SETUPS
      ? process.env.BENCH_SETUPS.split(',').map((n) => SETUPS[Number(n) - 1]!)
      : SETUPS;
    for (const setup of chosen) {
      const r = await runSetup(setup, dns, sink, options.messages, options.runs);
      results.set(setup.name, r);
      console.log(
        `  ${setup.name.padEnd(22)} ${fmt(r.perSecond).padStart(6)} msg/s end to end (runs ${r.runs.map((x) => fmt(x)).join(', ')}), ${fmt(r.statementsPerMessage, 1)} database statements per message, CPU per message ${fmt(r.nodeCpuMsPerMessage, 2)} ms mailsvc${r.postgresCpuMsPerMessage === null ? '' : ` + ${fmt(r.postgresCpuMsPerMessage, 2)} ms PostgreSQL`}, non-2xx ${r.non2xx}`,
      );
    }
    const sqlite = results.get(SETUPS[0]!.name)?.perSecond ?? NaN;
    const pg1 = results.get(SETUPS[1]!.name)?.perSecond ?? NaN;
    const pg2 = results.get(SETUPS[2]!.name)?.perSecond ?? NaN;
    console.log(
      `  PostgreSQL 1 node / SQLite = ${fmt(pg1 / sqlite, 2)} (target >= 0.8); 2 nodes / 1 node on PostgreSQL = ${fmt(pg2 / pg1, 2)} (target > 1)`,
    );
  } finally {
    await sink.stop();
    await dns.close();
  }
}
