import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, hostname } from 'node:os';
import { sql } from 'kysely';
import { ConfigError } from './config/load-config.js';
import type { Config } from './config/schema.js';
import { loadSecretKey } from './config/secret-key.js';
import { createDeliveryEngine, type DeliveryEngine } from './delivery/delivery-engine.js';
import { poolSigner, SIGN_TASK } from './delivery/dkim-signer.js';
import { COMPOSE_TASK, poolComposer } from './services/send/compose.js';
import { createWorkerPool, type WorkerPool } from './shared/worker-pool.js';
import { fetchWithMailauth, MtaStsPolicies, type PolicyFetcher } from './delivery/mta-sts.js';
import { createSmtpClient } from './delivery/smtp-client.js';
import { createHttpApp } from './intake/http/app.js';
import { startInbound } from './intake/smtp/inbound.js';
import { startSubmission, type SubmissionListeners } from './intake/smtp/submission.js';
import { loadSubmissionTls } from './intake/smtp/tls-files.js';
import { createServices, type Services } from './services/index.js';
import type { ServiceDeps } from './services/deps.js';
import { systemClock, type Clock } from './shared/clock.js';
import { createResolver, type DnsResolver } from './shared/dns.js';
import type { Logger } from './shared/logger.js';
import { migrateToLatest, openStore, sqliteFile, type Store } from './store/db.js';
import { holdServeLock } from './store/serve-lock.js';
import { createWebhookDispatcher } from './webhooks/dispatcher.js';
import { createMetrics, type ServerMetrics } from './observability/metrics.js';
import { countActiveQueueItems } from './store/queue.js';
import { runRetention } from './services/retention.js';
import { runAsLeader } from './store/leader-lock.js';
import { createWorkflowRunner } from './workflows/workflow-runner.js';

// Short enough that nodes restarted often (deploys) still clean up; each run is cheap when little is due.
const RETENTION_INTERVAL_MS = 10 * 60_000;
/** How fresh the overview's charts and /v1/emails/metrics are. */
const STATS_INTERVAL_MS = 60_000;

/**
 * The composition root: the one place that builds the store, services and listeners from
 * the configuration, and takes them down again in order.
 */

export interface Runtime {
  config: Config;
  store: Store;
  services: Services;
  deps: ServiceDeps;
  /** Threads for CPU-bound work (DKIM signing, MIME composition), spawned on first use. */
  workers: WorkerPool;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger: Logger;
  clock?: Clock;
  resolver?: DnsResolver;
  /** How MTA-STS policies are fetched (HTTPS on port 443 by default); tests replace it. */
  mtaStsFetcher?: PolicyFetcher;
  /** Called after mail was queued (the delivery workers claim it at once instead of at their next poll). */
  onQueued?: () => void;
  /** Called after an event was queued for workflows (the runner acts on it at once). */
  onTrigger?: () => void;
  /** The server's metrics; the CLI has none. */
  metrics?: ServerMetrics | undefined;
}

/** Opens the database, applies pending migrations and builds the services (CLI and server). */
export async function openRuntime(config: Config, options: RuntimeOptions): Promise<Runtime> {
  const store = openStore(config.database, { poolSize: config.databasePoolSize });
  const d = config.delivery;
  const workers = createWorkerPool({
    threads: d.signingThreads === 'auto' ? Math.max(1, availableParallelism() - 1) : d.signingThreads,
    tasks: { sign: SIGN_TASK, compose: COMPOSE_TASK },
  });
  const close = async () => {
    await workers.close();
    await store.close();
  };
  try {
    const { error, applied } = await migrateToLatest(store);
    if (error) throw error instanceof Error ? error : new Error(String(error));
    if (applied.length > 0) options.logger.info({ applied, database: store.location }, 'migrations applied');
    const deps: ServiceDeps = {
      db: store.db,
      dialect: store.dialect,
      durable: () => store.durable(),
      compose: poolComposer(workers),
      config,
      clock: options.clock ?? systemClock,
      logger: options.logger,
      resolver: options.resolver ?? createResolver(config.delivery.dnsServers),
      secretKey: loadSecretKey(config),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.mtaStsFetcher ? { mtaStsFetcher: options.mtaStsFetcher } : {}),
    };
    const services = createServices(deps, { onQueued: options.onQueued, onTrigger: options.onTrigger });
    await services.workspaces.ensureDefault();
    return { config, store, services, deps, workers, close };
  } catch (err) {
    await close();
    throw err;
  }
}

export interface RunningServer {
  runtime: Runtime;
  httpUrl: string;
  /** Bound submission ports, when the listeners run. */
  smtp: SubmissionListeners['ports'] | null;
  /** Bound port of the inbound listener (bounces, complaints, receiving routes), when it runs. */
  inboundPort: number | null;
  /** The delivery workers (null when delivery.enabled is false). */
  delivery: DeliveryEngine | null;
  stop(): Promise<void>;
}

/** Builds the delivery workers and their collaborators from the configuration. */
function buildDelivery(runtime: Runtime, options: RuntimeOptions): DeliveryEngine {
  const { config, deps } = runtime;
  const d = config.delivery;
  return createDeliveryEngine({
    db: deps.db,
    dialect: deps.dialect,
    config: d,
    clock: deps.clock,
    logger: deps.logger,
    resolver: deps.resolver,
    secretKey: deps.secretKey,
    smtp: createSmtpClient({ name: d.hostname, timeoutMs: d.timeoutSeconds * 1000, logger: deps.logger, extraCa: readCaFile(d.tlsCaFile) }),
    signer: poolSigner(runtime.workers),
    mtaSts: d.mtaSts ? new MtaStsPolicies(options.mtaStsFetcher ?? fetchWithMailauth(deps.resolver), () => deps.clock.now(), deps.logger) : null,
    batcher: runtime.services.batcher,
    loadContent: (email) => runtime.services.campaigns.contentFor(email),
    metrics: deps.metrics,
    ...(config.deliverability.guard.enabled ? { hold: runtime.services.reputation.holdClaimed } : {}),
  });
}

/** `delivery.tlsCaFile`, read at start-up so that a wrong path stops the server rather than every verified delivery. */
function readCaFile(file: string | null): string | null {
  if (!file) return null;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`config: delivery.tlsCaFile: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError(`config: delivery.tlsCaFile: ${file} holds no PEM certificate`);
  return pem;
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** A repeating background job that never overlaps itself and never keeps the process alive. */
function every(ms: number, logger: Logger, name: string, job: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    job()
      .catch((err: unknown) => logger.error({ err, job: name }, 'background job failed'))
      .finally(() => {
        running = false;
      });
  }, ms);
  timer.unref();
  return () => clearInterval(timer);
}

export async function startServer(config: Config, options: RuntimeOptions): Promise<RunningServer> {
  const { logger } = options;
  let wakeDelivery = () => {};
  let wakeWorkflows = () => {};
  // One registry per server: tests run several in one process.
  const metrics = config.metrics.enabled ? createMetrics() : undefined;
  // While it runs, `mailsvc db restore` refuses to overwrite the SQLite database under it.
  const databaseFile = sqliteFile(config.database);
  const lock = databaseFile ? holdServeLock(databaseFile) : null;
  let runtime: Runtime;
  try {
    runtime = await openRuntime(config, { ...options, metrics, onQueued: () => wakeDelivery(), onTrigger: () => wakeWorkflows() });
  } catch (err) {
    lock?.release();
    throw err;
  }
  metrics?.queueDepthFrom(() => countActiveQueueItems(runtime.store.db));
  metrics?.databaseStatementsFrom(() => runtime.store.statements());
  metrics?.reputationFrom(() => runtime.services.reputation.snapshot());
  const stops: Array<() => Promise<void> | void> = [];
  try {
    // Stopped after the listeners (stops run in reverse): no new mail comes in while the
    // workers finish or give back what they hold.
    const delivery = config.delivery.enabled ? buildDelivery(runtime, options) : null;
    if (delivery) {
      stops.push(() => delivery.stop());
      wakeDelivery = () => delivery.wake();
    }

    const app = createHttpApp({
      services: runtime.services,
      config,
      logger,
      clock: runtime.deps.clock,
      metrics,
      ready: async () => {
        await sql`select 1`.execute(runtime.store.db);
        return true;
      },
    });
    const server = createServer(app.callback());
    const address = await listen(server, config.http.port, config.http.host);
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const httpUrl = `http://${host}:${address.port}`;
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        }),
    );
    logger.info({ component: 'http', url: httpUrl }, 'HTTP API listening');

    let smtp: RunningServer['smtp'] = null;
    if (config.smtp.submission.enabled) {
      const submission = await startSubmission({ services: runtime.services, config, logger, clock: runtime.deps.clock, tls: await loadSubmissionTls(config) });
      stops.push(() => submission.close());
      smtp = submission.ports;
    }
    let inboundPort: number | null = null;
    if (config.smtp.inbound.enabled) {
      const inbound = await startInbound({ services: runtime.services, config, logger, clock: runtime.deps.clock, tls: await loadSubmissionTls(config) });
      stops.push(() => inbound.close());
      inboundPort = inbound.port;
    }
    delivery?.start();

    // Campaigns: write recipients to the queue in the background, then notice when all are done.
    const campaignOwner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    stops.push(
      every(500, logger, 'campaign-queue', async () => {
        for (let i = 0; i < 100 && (await runtime.services.campaigns.queueNext(campaignOwner)); i++) delivery?.wake();
      }),
    );
    stops.push(every(2000, logger, 'campaign-finish', () => runtime.services.campaigns.finishSent()));

    // Leader-only jobs: on PostgreSQL one node at a time runs each (advisory lock).
    if (config.domains.recheckInterval > 0) {
      const interval = config.domains.recheckInterval;
      stops.push(every(Math.min(interval, 60) * 1000, logger, 'domain-recheck', () => runAsLeader(runtime.store, 'domain-recheck', () => runtime.services.domains.recheckPending(interval))));
    }
    if (config.deliverability.checkInterval > 0) {
      const interval = config.deliverability.checkInterval;
      stops.push(every(Math.min(interval, 300) * 1000, logger, 'domain-checks', () => runAsLeader(runtime.store, 'domain-checks', () => runtime.services.domains.recheckAll(interval))));
    }
    stops.push(every(STATS_INTERVAL_MS, logger, 'stats-rollup', () => runAsLeader(runtime.store, 'stats-rollup', () => runtime.services.emailMetrics.rollUp())));
    if (config.deliverability.guard.enabled) {
      stops.push(every(config.deliverability.guard.interval * 1000, logger, 'reputation-guard', () => runAsLeader(runtime.store, 'reputation-guard', () => runtime.services.reputation.evaluate())));
    }
    stops.push(
      every(RETENTION_INTERVAL_MS, logger, 'retention', () =>
        runAsLeader(runtime.store, 'retention', async () => logger.info({ job: 'retention', deleted: await runRetention(runtime.deps) }, 'retention clean-up done')),
      ),
    );

    if (config.workflows.enabled) {
      const runner = createWorkflowRunner({ ...runtime.deps, services: runtime.services });
      runner.start();
      wakeWorkflows = () => runner.wake();
      stops.push(() => runner.stop());
    }

    if (config.webhooks.enabled) {
      const dispatcher = createWebhookDispatcher(runtime.deps);
      dispatcher.start();
      stops.push(() => dispatcher.stop());
    }

    let stopped: Promise<void> | undefined;
    const stop = () =>
      (stopped ??= (async () => {
        for (const s of stops.reverse()) await s();
        await runtime.close();
        lock?.release();
        logger.info('stopped');
      })());
    return { runtime, httpUrl, smtp, inboundPort, delivery, stop };
  } catch (err) {
    for (const s of stops.reverse()) await s();
    await runtime.close();
    lock?.release();
    throw err;
  }
}
