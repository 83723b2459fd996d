import { startDnsServer } from '../test/helpers/dns-server.js';
import { loadConfig } from '../src/config/load-config.js';
import { newId } from '../src/shared/ids.js';
import { openStore } from '../src/store/infra/db.js';
import { benchEnv, cli, cpuSeconds, fmt, median, rssMb, serve, verifiedBenchDomain } from './lib.js';

/**
 * The workflow runner of a separate `mailsvc serve` process draining a backlog: events are
 * written to the trigger outbox straight in the database, as POST /v1/events/send writes them
 * (the API takes 100 a second per workspace, which would measure the limit), each starts a
 * run (trigger -> condition -> send_email), and the clock stops when every run has completed
 * with its email queued (delivery is off: this measures the runner, not SMTP). Then many runs
 * wait on a 30-day delay: what they cost while they wait. The workspace's marketing limit is
 * raised (enterprise, 100,000/s): at the starter plan's 500/s, sends above it are refused and
 * retried, which would measure that limit instead.
 */
export async function workflowRuns(options: { events: number; waiting: number; runs: number }): Promise<void> {
  const dns = await startDnsServer();
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_ENABLED: 'false',
    MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
    MAILSVC_WEBHOOKS_ENABLED: 'false',
  });
  const { key, workspace_id: workspaceId } = JSON.parse(
    await cli(['keys', 'create', '--name', 'bench', '--json'], env),
  );
  await cli(['workspaces', 'set-plan', workspaceId, 'enterprise', '--marketing', '100000'], env);
  await verifiedBenchDomain(env, dns);
  const server = await serve(env);
  const store = openStore(loadConfig({ env }).database);
  const api = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<{ id: string }>;
  };
  /** Queues `count` events for as many new contacts, as the API's intake writes them. */
  const queueEvents = async (event: string, prefix: string, count: number): Promise<void> => {
    const now = Date.now();
    for (let i = 0; i < count; i += 500) {
      const rows = Array.from({ length: Math.min(500, count - i) }, (_, k) => ({
        id: newId(),
        workspace_id: workspaceId as string,
        event_name: event,
        event_id: null,
        subscriber_id: null,
        email: `${prefix}${i + k}@example.org`,
        contact_key: `${workspaceId}:${prefix}${i + k}@example.org`,
        payload: JSON.stringify({ plan: (i + k) % 2 ? 'pro' : 'free', n: i + k }),
        test: 0,
        created_at: now,
        lease_owner: null,
        lease_until: null,
      }));
      await store.db.insertInto('workflow_triggers').values(rows).execute();
    }
  };
  const runsIn = async (workflowId: string, status: string) =>
    Number(
      (
        await store.db
          .selectFrom('workflow_runs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('workflow_id', '=', workflowId)
          .where('status', '=', status as 'running')
          .executeTakeFirstOrThrow()
      ).n,
    );
  try {
    const template = await api('/v1/templates', {
      name: 'Welcome',
      subject: 'Welcome, {{contact.email}}',
      html: '<p>Your plan: {{plan}}</p>',
    });
    const completed: number[] = [];
    for (let run = 0; run < options.runs; run++) {
      const workflow = await api('/v1/automations', {
        name: `Bench ${run}`,
        status: 'enabled',
        steps: [
          { key: 'start', type: 'trigger', config: { event_name: `bench.signup.${run}` } },
          {
            key: 'pro',
            type: 'condition',
            config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' },
          },
          {
            key: 'welcome',
            type: 'send_email',
            config: {
              template: { id: template.id, variables: { plan: { var: 'event.plan' } } },
              from: 'hello@bench.example',
            },
          },
          { key: 'other', type: 'send_email', config: { template: { id: template.id }, from: 'hello@bench.example' } },
        ],
        connections: [
          { from: 'start', to: 'pro' },
          { from: 'pro', to: 'welcome', type: 'condition_met' },
          { from: 'pro', to: 'other', type: 'condition_not_met' },
        ],
      });
      const t0 = performance.now();
      await queueEvents(`bench.signup.${run}`, `r${run}-`, options.events);
      for (let i = 0; i < 6000 && (await runsIn(workflow.id, 'completed')) < options.events; i++)
        await new Promise((r) => setTimeout(r, 100));
      const seconds = (performance.now() - t0) / 1000;
      completed.push(options.events / seconds);
      console.log(
        `  run ${run + 1}: ${fmt(options.events)} runs (a new contact each) completed in ${fmt(seconds, 1)} s: ${fmt(completed.at(-1)!)} runs/s`,
      );
    }
    console.log(
      `workflow runs (SQLite, separate server process, delivery off, default workflows.* settings, a backlog of ${fmt(options.events)} events)`,
    );
    console.log(
      `  runs completed (event consumed, contact created, run started, condition, email queued): median ${fmt(median(completed))}/s of ${options.runs} runs`,
    );

    const waiting = await api('/v1/automations', {
      name: 'Thirty days',
      status: 'enabled',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'bench.trial' } },
        { key: 'wait', type: 'delay', config: { duration: '30 days' } },
      ],
      connections: [{ from: 'start', to: 'wait' }],
    });
    const before = rssMb(server.process.pid!) ?? 0;
    await queueEvents('bench.trial', 'w', options.waiting);
    for (let i = 0; i < 3000 && (await runsIn(waiting.id, 'running')) < options.waiting; i++)
      await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 2000));
    const cpu0 = cpuSeconds(server.process.pid!) ?? 0;
    await new Promise((r) => setTimeout(r, 10_000));
    const idleCpu = ((cpuSeconds(server.process.pid!) ?? 0) - cpu0) / 10;
    console.log(
      `  ${fmt(options.waiting)} runs waiting on a 30-day delay: server RSS ${fmt(before)} MB before, ${fmt(rssMb(server.process.pid!) ?? 0)} MB while they wait; CPU while they wait ${fmt(idleCpu * 100, 1)}% of a core (polling)`,
    );
  } finally {
    await store.close();
    await server.stop();
    await dns.close();
  }
}
