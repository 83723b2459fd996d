import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config/schema.js';
import { createHttpApp } from './intake/http/app.js';
import { createMcpEndpoint } from './intake/mcp/http-endpoint.js';
import { createOAuthServer } from './intake/http/oauth/provider.js';
import { packageVersion } from './shared/package-version.js';
import { startInbound } from './intake/smtp/inbound.js';
import { startSubmission, type SubmissionListeners } from './intake/smtp/submission.js';
import { loadSubmissionTls } from './intake/smtp/tls-files.js';
import { createMetrics } from './observability/metrics.js';
import { isolateMemory } from './shared/isolate-memory.js';
import { inboundKinds } from './receiving/inbound-kinds.js';
import { openRuntime, type Runtime, type RuntimeOptions } from './runtime.js';
import { readinessProbe } from './observability/readiness.js';
import { startWorkers, type Workers } from './start-workers.js';
import { pingDatabase, sqliteFile } from './store/infra/db.js';
import { asListenError } from './shared/listen-error.js';
import { releaseHeldLeases } from './store/lease.js';
import { countActiveQueueItems } from './store/queue.js';
import { holdServeLock } from './store/infra/serve-lock.js';

/**
 * `mailsvc serve`: opens the runtime (runtime.ts), starts the listeners and the workers
 * (start-workers.ts), and takes them down again in order on stop: listeners first, so no new
 * mail comes in while the workers finish or give back what they hold.
 */

export interface RunningServer {
  runtime: Runtime;
  httpUrl: string;
  /** Bound submission ports, when the listeners run. */
  smtp: SubmissionListeners['ports'] | null;
  /** Bound port of the inbound listener (bounces, complaints, reports, receiving routes), when it runs. */
  inboundPort: number | null;
  /** The worker kernel and its jobs. */
  workers: Workers;
  stop(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(asListenError(err, 'http.port', 'http.host', host, port)));
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

export async function startServer(config: Config, options: RuntimeOptions): Promise<RunningServer> {
  const { logger } = options;
  // One registry per server: tests run several in one process.
  const metrics = config.metrics.enabled ? createMetrics() : undefined;
  // SQLite: a restore cannot run under us, and no other server can (so every lease is ours).
  const databaseFile = sqliteFile(config.database);
  const lock = databaseFile ? holdServeLock(databaseFile) : null;
  let runtime: Runtime;
  try {
    runtime = await openRuntime(config, { ...options, metrics });
  } catch (err) {
    lock?.release();
    throw err;
  }
  const stops: Array<() => Promise<void> | void> = [];
  try {
    if (lock) {
      // A server killed while it held mail, webhooks or runs delivers them again now, not after the lease.
      const released = await releaseHeldLeases(runtime.store.db, null, runtime.deps.clock.now());
      if (Object.values(released).some((n) => n > 0))
        logger.info({ released }, 'gave back the leases of the previous run');
    }
    metrics?.queueDepthFrom(() => countActiveQueueItems(runtime.store.db));
    metrics?.databaseStatementsFrom(() => runtime.store.statements());
    metrics?.reputationFrom(() => runtime.services.reputation.snapshot());
    metrics?.storageFrom(() => runtime.deps.space.read());
    metrics?.threadMemoryFrom(async () => [
      { thread: 'main', memory: isolateMemory() },
      ...(await runtime.workers.memory()).map((memory, i) => ({ thread: `main-pool-${i}`, memory })),
    ]);

    const httpDeps = {
      services: runtime.services,
      config,
      logger,
      clock: runtime.deps.clock,
      metrics,
      ready: readinessProbe({
        ping: () => pingDatabase(runtime.store.db),
        space: runtime.deps.space,
        timeoutMs: Math.min(2000, config.databaseAcquireTimeoutMs),
      }),
    };
    // One authorization server for the API and /mcp: both name it in their 401s.
    const oauth = createOAuthServer(httpDeps);
    const mcp = config.mcp.enabled ? createMcpEndpoint({ ...httpDeps, oauth }, packageVersion()) : undefined;
    const app = createHttpApp({ ...httpDeps, mcp, oauth });
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
    // Stopped before the listener (stops run in reverse): an assistant's open stream (GET /mcp) would hold it open.
    if (mcp) stops.push(() => mcp.close());
    logger.info({ component: 'http', url: httpUrl }, 'HTTP API listening');

    let smtp: RunningServer['smtp'] = null;
    if (config.smtp.submission.enabled) {
      const submission = await startSubmission({
        services: runtime.services,
        config,
        logger,
        clock: runtime.deps.clock,
        tls: await loadSubmissionTls(config),
      });
      stops.push(() => submission.close());
      smtp = submission.ports;
    }
    let inboundPort: number | null = null;
    if (config.smtp.inbound.enabled) {
      const kinds = inboundKinds({ ...runtime.deps, batcher: runtime.services.batcher });
      const inbound = await startInbound({
        services: runtime.services,
        kinds,
        config,
        logger,
        clock: runtime.deps.clock,
        tls: await loadSubmissionTls(config),
      });
      stops.push(() => inbound.close());
      inboundPort = inbound.port;
    }

    // Stopped first (stops run in reverse): the listeners are closed by then.
    const workers = startWorkers(runtime, { ...options, metrics });
    stops.unshift(() => workers.stop());

    let stopped: Promise<void> | undefined;
    const stop = () =>
      (stopped ??= (async () => {
        for (const s of stops.reverse()) await s();
        await runtime.close();
        lock?.release();
        logger.info('stopped');
      })());
    return { runtime, httpUrl, smtp, inboundPort, workers, stop };
  } catch (err) {
    for (const s of stops.reverse()) await s();
    await runtime.close();
    lock?.release();
    throw err;
  }
}
