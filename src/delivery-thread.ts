import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { ConfigError } from './config/load-config.js';
import type { Config } from './config/schema.js';
import { deliveryJob, type DeliveryDeps, type DeliveryJob } from './delivery/delivery-job.js';
import { poolSigner, SIGN_TASK } from './delivery/dkim-signer.js';
import { pausedDomainHold } from './delivery/hold-paused.js';
import { fetchWithMailauth, MtaStsPolicies, type PolicyFetcher } from './delivery/mta-sts.js';
import { createSmtpClient } from './delivery/smtp-client.js';
import { campaignMessages } from './messages/campaign-message.js';
import { COMPOSE_TASK, poolComposer } from './messages/compose.js';
import { messageLinks } from './messages/links.js';
import type { Metrics } from './observability/metrics.js';
import { systemClock, type Clock } from './shared/clock.js';
import { steadyClock } from './shared/steady-clock.js';
import { createResolver, type DnsResolver } from './shared/dns.js';
import { isolateMemory } from './shared/isolate-memory.js';
import { createLogger, type Logger } from './shared/logger.js';
import { createWorkerPool, type WorkerPool } from './shared/worker-pool.js';
import { createCommitBatcher, type CommitBatcher } from './store/infra/commit-batcher.js';
import { openStore, storeOptions, type Db, type Store } from './store/infra/db.js';
import {
  listOthersPauses,
  removeDeliveryDestinations,
  saveDeliveryDestinations,
} from './store/delivery-destinations.js';
import type { Email } from './store/emails.js';
import { createKernel } from './workers/kernel.js';
import { startTasks, type Task } from './workers/tasks.js';
import type { ThreadMessage } from './workers/threads.js';

/**
 * A delivery thread: the delivery job on a kernel of its own, off the main event loop, with its
 * own database connection, lease owner, SMTP connections and signing thread. The main thread
 * keeps HTTP and SMTP intake; it tells the thread when mail was queued (the commits it saw) and
 * hears back the thread's commits (events wake the webhook job), its counters and what its
 * gate holds. Also where delivery's collaborators are built from the configuration, for a
 * thread or for the main thread (`delivery.workers: 0`).
 */

interface DeliveryWiring {
  config: Config;
  store: Store;
  batcher: CommitBatcher;
  clock: Clock;
  logger: Logger;
  resolver: DnsResolver;
  secretKey: Buffer;
  /** Threads that sign and compose. */
  pool: WorkerPool;
  content: (email: Email) => Promise<Buffer | undefined>;
  metrics?: Metrics | undefined;
  mtaStsFetcher?: PolicyFetcher | undefined;
}

/** Delivery's collaborators, from the configuration. */
export function deliveryDeps(w: DeliveryWiring): DeliveryDeps {
  const d = w.config.delivery;
  return {
    db: w.store.db,
    dialect: w.store.dialect,
    config: d,
    clock: w.clock,
    resolver: w.resolver,
    secretKey: w.secretKey,
    smtp: createSmtpClient({
      name: d.hostname,
      timeoutMs: d.timeoutSeconds * 1000,
      logger: w.logger,
      extraCa: readCaFile(d.tlsCaFile),
    }),
    signer: poolSigner(w.pool),
    mtaSts: d.mtaSts
      ? new MtaStsPolicies(w.mtaStsFetcher ?? fetchWithMailauth(w.resolver), () => w.clock.now(), w.logger)
      : null,
    batcher: w.batcher,
    compose: w.content,
    hold: w.config.deliverability.guard.enabled ? pausedDomainHold(w.store.db, w.clock) : undefined,
    metrics: w.metrics,
  };
}

/** `delivery.tlsCaFile`, read at start-up so that a wrong path stops the server rather than every verified delivery. */
function readCaFile(file: string | null): string | null {
  if (!file) return null;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `config: delivery.tlsCaFile: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new ConfigError(`config: delivery.tlsCaFile: ${file} holds no PEM certificate`);
  return pem;
}

/** Threads that sign and compose: "auto" is one fewer than the cores (at least 1). */
export const signingThreads = (config: Config): number =>
  config.delivery.signingThreads === 'auto' ? Math.max(1, availableParallelism() - 1) : config.delivery.signingThreads;

/** What the main thread hands a delivery thread. */
export interface DeliveryThreadData {
  config: Config;
  secretKey: Buffer;
  /** This thread's share of `delivery.signingThreads`. */
  signingThreads: number;
}

/** How often a thread reports what its gate holds, its statement count and its memory (its own isolate's, its signing threads') to the main thread (for /metrics). */
const GATE_REPORT_MS = 1000;
/** Another node's report older than this is of a node that stopped or died. */
const REPORT_FRESH_MS = 30_000;

/**
 * The periodic task that writes what a delivery host's gate holds to `delivery_destinations`
 * (every delivery.reportInterval ms), and reads back the pauses other nodes were asked for:
 * a provider that told one node to slow down from an address is paused on every node.
 */
export const destinationsTask = (
  db: Db,
  owner: string,
  job: Pick<DeliveryJob, 'destinations' | 'adoptPauses'>,
  clock: Clock,
  everyMs: number,
): Task => ({
  name: 'delivery-destinations',
  everyMs,
  leader: false,
  run: async () => {
    const now = clock.now();
    job.adoptPauses(await listOthersPauses(db, owner, now - REPORT_FRESH_MS, now));
    const destinations = () => job.destinations();
    const rows = destinations().map((d) => ({
      owner,
      domain: d.domain,
      active: d.active,
      allowed: d.allowed,
      waiting: d.waiting,
      paused_until: d.pausedUntil || null,
      hold: d.hold,
      updated_at: now,
      provider: d.provider ?? null,
      source: d.source ?? null,
      domains: d.domains?.join(' ') ?? null,
      state: d.state ?? null,
      per_minute: d.perMinute ?? null,
      limit_concurrency: d.limit?.concurrency ?? null,
      limit_per_minute: d.limit?.perMinute ?? null,
      last_reply: d.lastReply ?? null,
      last_reply_at: d.lastReplyAt ?? null,
    }));
    return saveDeliveryDestinations(db, owner, rows);
  },
});

async function runThread(data: DeliveryThreadData): Promise<void> {
  const port = parentPort!;
  const post = (message: ThreadMessage) => port.postMessage(message);
  const { config, secretKey } = data;
  // Log lines go to the main thread, which writes them where its own go (and formats them alike).
  const logger = createLogger(config.log.level, { write: (line: string) => post({ type: 'log', line }) });
  const store = openStore(config.database, storeOptions(config, logger));
  const batcher = createCommitBatcher(store.db, store.dialect, config.databasePoolSize, () => store.durable());
  const pool = createWorkerPool({
    threads: data.signingThreads,
    tasks: { sign: SIGN_TASK, compose: COMPOSE_TASK },
    size: config.delivery.signingThreadMemory,
  });
  const clock = systemClock;
  // Counters are the main thread's (one registry per server): each call goes there.
  const metrics = new Proxy({} as Metrics, {
    get:
      (_, name: string) =>
      (...args: unknown[]) =>
        post({ type: 'metric', name, args }),
  });
  const content = campaignMessages({
    db: store.db,
    clock,
    compose: poolComposer(pool),
    links: messageLinks(secretKey, config.http.publicUrl),
  });
  // Leases and claims by a clock that is never stepped back.
  const kernel = createKernel({ db: store.db, clock: steadyClock(), logger, batcher });
  let job: DeliveryJob | null = null;
  job = kernel.add('delivery', (hand) =>
    deliveryJob(
      hand,
      deliveryDeps({
        config,
        store,
        batcher,
        clock,
        logger,
        resolver: createResolver(config.delivery.dnsServers),
        secretKey,
        pool,
        content,
        metrics,
      }),
    ),
  );
  store.onCommit((tables) => {
    kernel.committed(tables);
    post({ type: 'committed', tables: [...tables] });
  });
  const report = setInterval(
    () =>
      void pool
        .memory()
        .catch(() => [])
        .then((signing) =>
          post({
            type: 'destinations',
            list: job.destinations(),
            statements: store.statements(),
            memory: { thread: isolateMemory(), signing },
          }),
        ),
    GATE_REPORT_MS,
  );
  report.unref();
  const tasks = startTasks([destinationsTask(store.db, kernel.owner, job, clock, config.delivery.reportInterval)], {
    store,
    logger,
  });

  port.on('message', (message: ThreadMessage) => {
    if (message.type === 'committed') kernel.committed(message.tables as string[]);
    else if (message.type === 'wake') kernel.wake(String(message.name));
    else if (message.type === 'stop') {
      clearInterval(report);
      void (async () => {
        await tasks.stop();
        await kernel.stop();
        await removeDeliveryDestinations(store.db, kernel.owner).catch(() => {});
        await pool.close();
        await store.close();
        port.close();
      })();
    }
  });
  kernel.start();
  post({ type: 'ready', owner: kernel.owner });
}

if (!isMainThread && (workerData as { delivery?: DeliveryThreadData } | null)?.delivery) {
  void runThread((workerData as { delivery: DeliveryThreadData }).delivery);
}
