import { startDnsServer } from '../test/helpers/dns-server.js';
import { loadConfig } from '../src/config/load-config.js';
import { migrateToLatest, openStore } from '../src/store/infra/db.js';
import { benchEnv, cli, fmt, peakRssMb, rssMb, serve, verifiedBenchDomain, benchSubscriber } from './lib.js';

/**
 * Issue 6 target: queueing a campaign to 100,000 subscribers in under 10 s with the server
 * under 200 MB RSS. Subscribers are written straight into the database first (the API would
 * take minutes at 100/s); the campaign then goes through the real HTTP API of a separate
 * server process with delivery off, and the clock stops when the campaign leaves `queuing`.
 */
export async function campaignQueue(options: { subscribers: number }): Promise<void> {
  const dns = await startDnsServer();
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_ENABLED: 'false',
    MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
    MAILSVC_WEBHOOKS_ENABLED: 'false',
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
  });
  const { key, workspace_id: workspaceId } = JSON.parse(
    await cli(['keys', 'create', '--name', 'bench', '--json'], env),
  );
  await verifiedBenchDomain(env, dns);

  const store = openStore(loadConfig({ env }).database);
  await migrateToLatest(store);
  const started = Date.now();
  for (let i = 0; i < options.subscribers; i += 5000) {
    await store.db.transaction().execute(async (trx) => {
      for (let j = i; j < Math.min(i + 5000, options.subscribers); j += 500) {
        const rows = Array.from({ length: Math.min(500, options.subscribers - j) }, (_, k) =>
          benchSubscriber(workspaceId, j + k, 'example.org', started),
        );
        await trx.insertInto('subscribers').values(rows).execute();
      }
    });
  }
  await store.close();

  const server = await serve(env);
  try {
    const idleRss = rssMb(server.process.pid!);
    const t0 = performance.now();
    const res = await fetch(`${server.url}/api/v1/campaigns/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        subject: 'Spring sale for {{first_name}}',
        from_name: 'Bench',
        from_email: 'news@bench.example',
        html: '<p>Hello {{first_name}}, {{greeting}}</p>',
        variables: { greeting: 'hi' },
      }),
    });
    const accepted = performance.now() - t0;
    const body = (await res.json()) as { campaignId: string; message: string };
    let status = 'queuing';
    let campaign: { status: string; counts: { queued: number } } | undefined;
    for (let i = 0; i < 600 && status === 'queuing'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      campaign = (await (
        await fetch(`${server.url}/v1/campaigns/${body.campaignId}`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as typeof campaign;
      status = campaign!.status;
    }
    const queued = performance.now() - t0;
    console.log(`campaign queueing (${fmt(options.subscribers)} subscribers, SQLite, separate server process)`);
    console.log(`  202 answered in ${fmt(accepted)} ms: "${body.message}"`);
    console.log(
      `  all queued in ${fmt(queued / 1000, 1)} s (${fmt(campaign!.counts.queued)} messages, ${fmt(campaign!.counts.queued / (queued / 1000))} msg/s; target < 10 s)`,
    );
    console.log(
      `  server peak RSS ${fmt(peakRssMb(server.process.pid!) ?? 0)} MB (target < 200 MB); ${fmt(idleRss ?? 0)} MB idle before the campaign`,
    );
  } finally {
    await server.stop();
    await dns.close();
  }
}
