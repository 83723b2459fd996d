import { systemClock } from './shared/clock.js';
import { steadyClock } from './shared/steady-clock.js';
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { campaignQueueJob } from './campaigns/queue-job.js';
import { finishCampaigns } from './campaigns/finish-campaigns.js';
import { chooseWinners } from './campaigns/choose-winners.js';
import type { Config } from './config/schema.js';
import { deliveryDeps, destinationsTask, signingThreads, type DeliveryThreadData } from './delivery-thread.js';
import { deliveryJob } from './delivery/delivery-job.js';
import type { DestinationState } from './delivery/gate.js';
import type { Metrics, ServerMetrics, ThreadMemorySample } from './observability/metrics.js';
import type { IsolateMemory } from './shared/isolate-memory.js';
import type { Runtime, RuntimeOptions } from './runtime.js';
import { runRetention } from './tasks/retention.js';
import { evaluateReputation } from './services/deliverability/reputation-round.js';
import { rollUpStats } from './tasks/roll-up-stats.js';
import { releaseHeldLeases } from './store/lease.js';
import { webhookJob } from './webhooks/webhook-job.js';
import { agentRunJob } from './inbox-agent/agent-run-job.js';
import { importJob } from './imports/import-job.js';
import { createKernel, type Kernel } from './workers/kernel.js';
import { startTasks, type Task } from './workers/tasks.js';
import { startThreads, type ThreadMessage, type Threads } from './workers/threads.js';
import { DefinitionCache } from './workflows/definition-cache.js';
import { runJob } from './workflows/run-job.js';
import { triggerJob } from './workflows/trigger-job.js';

/**
 * The composition root's second half: the worker kernel with every job driven by rows
 * (delivery, webhooks, workflow triggers and runs, campaign queuing, inbox-agent runs, contact
 * imports), and the periodic tasks
 * driven by time. `main.ts` starts them after the listeners and stops them before.
 */

export interface Workers {
  kernel: Kernel;
  /** The delivery threads (null when delivery runs on the main thread, or not at all). */
  deliveryThreads: Threads | null;
  /** Ends the sleep of the jobs named `name`, wherever they run. */
  wake(name: string): void;
  stop(): Promise<void>;
}

// Short enough that nodes restarted often (deploys) still clean up; each run is cheap when little is due.
const RETENTION_INTERVAL_MS = 10 * 60_000;
/** How fresh the overview's charts and /v1/emails/metrics are. */
const STATS_INTERVAL_MS = 60_000;

/**
 * Delivery threads: "auto" gives half the cores to delivery (one on two cores), the rest to
 * intake; 0 delivers on the main thread. A clock, resolver or MTA-STS fetcher injected by a
 * test cannot cross into a thread: delivery then runs on the main thread too.
 */
function deliveryThreadCount(config: Config, options: RuntimeOptions): number {
  if (options.clock || options.resolver || options.mtaStsFetcher) return 0;
  const w = config.delivery.workers;
  return w === 'auto' ? Math.floor(availableParallelism() / 2) : w;
}

/** The delivery thread's module, as built (.js) or from source (.ts, under tsx). */
const threadEntry = new URL(`./delivery-thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export function startWorkers(
  runtime: Runtime,
  options: RuntimeOptions & { metrics?: ServerMetrics | undefined },
): Workers {
  const { config, deps, services, store } = runtime;
  const { db, dialect, clock } = deps;
  // Leases and claims by a clock that is never stepped back (a test's own clock as it is).
  const kernel = createKernel({
    db,
    clock: clock === systemClock ? steadyClock() : clock,
    logger: deps.logger,
    batcher: services.batcher,
  });
  // Every insert anywhere in this process wakes the jobs taking that table's rows.
  store.onCommit((tables) => kernel.committed(tables));

  const tasks: Task[] = [];
  let threads: Threads | null = null;
  if (config.delivery.enabled) {
    const count = deliveryThreadCount(config, options);
    if (count === 0) {
      const job = kernel.add('delivery', (hand) =>
        deliveryJob(
          hand,
          deliveryDeps({
            config,
            store,
            batcher: services.batcher,
            clock,
            logger: deps.logger,
            resolver: deps.resolver,
            secretKey: deps.secretKey,
            pool: runtime.workers,
            content: runtime.content,
            metrics: deps.metrics,
            mtaStsFetcher: options.mtaStsFetcher,
          }),
        ),
      );
      options.metrics?.destinationsFrom(() => job.destinations());
      tasks.push(destinationsTask(db, kernel.owner, job, clock, config.delivery.reportInterval));
    } else {
      threads = deliveryThreads(runtime, options, kernel, count);
    }
  }
  if (config.webhooks.enabled) {
    kernel.add('webhooks', (hand) =>
      webhookJob(hand, {
        db,
        dialect,
        settings: config.webhooks,
        clock,
        secretKey: deps.secretKey,
        resolver: deps.resolver,
        batcher: services.batcher,
        metrics: deps.metrics,
      }),
    );
  }
  if (config.workflows.enabled) {
    const common = {
      db,
      dialect,
      clock,
      settings: config.workflows,
      batcher: services.batcher,
      definitions: new DefinitionCache(),
    };
    kernel.add('workflow-triggers', (hand) => triggerJob(hand, { ...common, subscribers: services.subscribers }));
    kernel.add('workflow-runs', (hand) => runJob(hand, { ...common, services }));
  }

  // Campaigns: recipients written to the queue page by page, through the one door.
  kernel.add('campaign-queue', (hand) =>
    campaignQueueJob(hand, { db, dialect, clock, config, links: deps.links, enqueue: services.enqueue, pollMs: 500 }),
  );
  if (config.inboxes.agent.url) {
    // New inbox messages to their agents, a run at a time per node, under a lease.
    kernel.add('inbox-agent', (hand) =>
      agentRunJob(hand, { db, dialect, clock, config, resolver: deps.resolver, logger: deps.logger, services }),
    );
  }
  // Contact imports: one at a time per node, resumed from its cursor by any node after a crash.
  kernel.add('contact-imports', (hand) =>
    importJob(hand, {
      db,
      dialect,
      clock,
      logger: deps.logger,
      subscribers: services.subscribers,
      topics: services.topics,
      pollMs: 1000,
    }),
  );

  tasks.push(
    // Campaigns whose every message has an outcome are sent.
    { name: 'campaign-finish', everyMs: 2000, leader: true, run: () => finishCampaigns(deps) },
    // A/B tests whose time is up get their winner (the wait is the campaign's winner_due_at).
    { name: 'ab-test-winners', everyMs: 1000, leader: true, run: () => chooseWinners(deps) },
    { name: 'stats-rollup', everyMs: STATS_INTERVAL_MS, leader: true, run: () => rollUpStats(deps) },
    {
      name: 'retention',
      everyMs: RETENTION_INTERVAL_MS,
      leader: true,
      run: async () =>
        deps.logger.info({ task: 'retention', deleted: await runRetention(deps) }, 'retention clean-up done'),
    },
  );
  if (config.domains.recheckInterval > 0) {
    const interval = config.domains.recheckInterval;
    tasks.push({
      name: 'domain-recheck',
      everyMs: Math.min(interval, 60) * 1000,
      leader: true,
      run: () => services.domains.recheckPending(interval),
    });
  }
  if (config.deliverability.checkInterval > 0) {
    const interval = config.deliverability.checkInterval;
    tasks.push({
      name: 'domain-checks',
      everyMs: Math.min(interval, 300) * 1000,
      leader: true,
      run: () => services.domains.recheckAll(interval),
    });
  }
  if (config.deliverability.guard.enabled) {
    tasks.push({
      name: 'reputation-guard',
      everyMs: config.deliverability.guard.interval * 1000,
      leader: true,
      run: () => evaluateReputation(deps),
    });
  }
  kernel.start();
  const periodic = startTasks(tasks, { store, logger: deps.logger });
  return {
    kernel,
    deliveryThreads: threads,
    wake(name) {
      kernel.wake(name);
      threads?.broadcast({ type: 'wake', name });
    },
    async stop() {
      await periodic.stop();
      await Promise.all([kernel.stop(), threads?.stop()]);
    },
  };
}

/**
 * Delivery on `count` threads of its own (delivery-thread.ts). The main thread tells them of
 * its commits (new mail), and hears theirs (events wake the webhook job), their counters,
 * their log lines and what their gates hold. A thread that dies has its claims given back at
 * once and is replaced.
 */
function deliveryThreads(
  runtime: Runtime,
  options: { metrics?: ServerMetrics | undefined },
  kernel: Kernel,
  count: number,
): Threads {
  const { config, deps, store } = runtime;
  const gates = new Map<number, DestinationState[]>();
  // Statements of each running thread's store, and of the threads that died (a counter never goes back).
  const statements = new Map<number, number>();
  let statementsOfDead = 0;
  // Each running thread's last memory report: its own isolate's and its signing threads'.
  const memory = new Map<number, { thread: IsolateMemory; signing: IsolateMemory[] }>();
  // The thread's log lines are written where the main thread's go, formatted alike.
  // eslint-disable-next-line no-restricted-syntax -- pino keeps its destination under a symbol its types do not declare
  const destination = (deps.logger as unknown as Record<symbol, { write(line: string): void }>)[
    pino.symbols.streamSym
  ]!;
  const data: DeliveryThreadData = {
    config,
    secretKey: deps.secretKey,
    signingThreads: Math.max(signingThreads(config) > 0 ? 1 : 0, Math.floor(signingThreads(config) / count)),
  };
  const threads = startThreads({
    entry: threadEntry,
    count,
    data: { delivery: data },
    size: config.delivery.threadMemory,
    logger: deps.logger,
    onMessage(message: ThreadMessage, index: number) {
      switch (message.type) {
        case 'committed':
          kernel.committed(message.tables as string[]);
          break;
        case 'metric':
          if (options.metrics)
            (options.metrics[message.name as keyof Metrics] as (...args: unknown[]) => void)(
              ...(message.args as unknown[]),
            );
          break;
        case 'destinations':
          gates.set(index, message.list as DestinationState[]);
          statements.set(index, message.statements as number);
          memory.set(index, message.memory as { thread: IsolateMemory; signing: IsolateMemory[] });
          break;
        case 'log':
          destination.write(message.line as string);
          break;
      }
    },
    onCrash: async (owner, index) => {
      gates.delete(index);
      statementsOfDead += statements.get(index) ?? 0;
      statements.delete(index);
      memory.delete(index);
      if (owner)
        deps.logger.warn(
          { owner, released: await releaseHeldLeases(store.db, owner, deps.clock.now()) },
          'gave back the claims of a dead delivery thread',
        );
    },
  });
  options.metrics?.destinationsFrom(() => [...gates.values()].flat());
  options.metrics?.databaseStatementsFrom(() => statementsOfDead + [...statements.values()].reduce((a, b) => a + b, 0));
  options.metrics?.threadMemoryFrom(async () =>
    [...memory].flatMap(([index, m]): ThreadMemorySample[] => [
      { thread: `delivery-${index}`, memory: m.thread },
      ...m.signing.map((s, i) => ({ thread: `delivery-${index}-pool-${i}`, memory: s })),
    ]),
  );
  // New mail committed here wakes the threads' delivery jobs.
  store.onCommit((tables) => {
    if (tables.has('queue_items')) threads.broadcast({ type: 'committed', tables: [...tables] });
  });
  return threads;
}
