import { startDnsServer } from '../test/helpers/dns-server.js';
import { loadConfig } from '../src/config/load-config.js';
import { migrateToLatest, openStore } from '../src/store/infra/db.js';
import {
  benchEnv,
  cli,
  fmt,
  peakRssMb,
  rssMb,
  serve,
  statementsOf,
  verifiedBenchDomain,
  benchSubscriber,
} from './lib.js';
import { waitForSink } from './postfix.js';
import { startSink } from './smtp-sink.js';

/**
 * Issue 14 target: a campaign to 100,000 subscribers from its POST to the last message at the
 * sink in under 3 minutes, server peak RSS under 300 MB. BENCH_CAMPAIGN sets the subscribers
 * (default 10,000; 100000 for the target). Subscribers are written straight into the database
 * first (the API would take minutes); the campaign goes through the real HTTP API of a
 * separate server process, queued, composed per subscriber (tracking, unsubscribe link),
 * DKIM-signed (RSA-2048) and delivered to a loopback sink. Shipped defaults except the
 * destination limit (concurrency 20, no rate cap, as Postfix).
 */
export async function campaignDelivery(options: { subscribers: number }): Promise<void> {
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
  const { key, workspace_id: workspaceId } = JSON.parse(
    await cli(['keys', 'create', '--name', 'bench', '--json'], env),
  );
  await cli(
    ['workspaces', 'set-plan', workspaceId, 'enterprise', '--transactional', '1000000', '--marketing', '1000000'],
    env,
  );
  await verifiedBenchDomain(env, dns);

  const store = openStore(loadConfig({ env }).database);
  await migrateToLatest(store);
  const started = Date.now();
  for (let i = 0; i < options.subscribers; i += 5000) {
    await store.db.transaction().execute(async (trx) => {
      for (let j = i; j < Math.min(i + 5000, options.subscribers); j += 500) {
        const rows = Array.from({ length: Math.min(500, options.subscribers - j) }, (_, k) =>
          benchSubscriber(workspaceId, j + k, 'sink.bench', started),
        );
        await trx.insertInto('subscribers').values(rows).execute();
      }
    });
  }
  await store.close();

  const server = await serve(env);
  const pid = server.process.pid!;
  try {
    const idleRss = rssMb(pid);
    const s0 = await statementsOf(server.url);
    const t0 = performance.now();
    const res = await fetch(`${server.url}/api/v1/campaigns/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        subject: 'Spring sale for {{first_name}}',
        from_name: 'Bench',
        from_email: 'news@bench.example',
        html: `<p>Hello {{first_name}}, {{greeting}}</p>${'<p>Our spring collection is here: new colours, new sizes, and free returns for thirty days.</p>'.repeat(8)}`,
        variables: { greeting: 'hi' },
      }),
    });
    if (!res.ok) throw new Error(`campaign refused: ${res.status} ${await res.text()}`);
    let peakSeen = 0;
    const sampler = setInterval(() => (peakSeen = Math.max(peakSeen, rssMb(pid) ?? 0)), 500);
    const done = await waitForSink(sink, options.subscribers, 60 * 60_000);
    clearInterval(sampler);
    const s1 = await statementsOf(server.url);
    const seconds = (done - t0) / 1000;
    console.log(
      `campaign delivery (${fmt(options.subscribers)} subscribers, SQLite, POST /api/v1/campaigns/send -> queue -> compose -> DKIM RSA-2048 -> loopback ${sink.kind})`,
    );
    console.log(
      `  last message at the sink after ${fmt(seconds, 1)} s (${fmt(options.subscribers / seconds)} msg/s; target < 180 s for 100,000, i.e. >= 556 msg/s)`,
    );
    console.log(
      `  server peak RSS ${fmt(peakRssMb(pid) ?? peakSeen)} MB (target < 300 MB); ${fmt(idleRss ?? 0)} MB idle before the campaign; ${fmt((s1 - s0) / options.subscribers, 1)} database statements per message`,
    );
  } finally {
    await server.stop();
    await sink.stop();
    await dns.close();
  }
}
