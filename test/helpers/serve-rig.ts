import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { serveCli, type Served } from './cli.js';
import { routeDomain } from './delivery.js';
import { startDnsServer, type TestDns } from './dns-server.js';
import { verifyDomainWith } from './domains.js';
import { startMxServer, type TestMx } from './mx-server.js';
import { testDatabase, type TestDatabase } from './postgres.js';

export interface ServeRig {
  /** The rig's temp directory (the nodes' data directories are below it); removed at close. */
  dir: string;
  database: TestDatabase;
  /** This process's own runtime on the same database: keys, domains, and reads of what the nodes did. */
  runtime: Runtime;
  workspaceId: string;
  /** An API key of the default workspace. */
  key: string;
  /** The loopback DNS and MX the nodes deliver to (`deliver` given). */
  dns: TestDns;
  mx: TestMx;
  /** The environment node `name` runs with: its own data directory, the rig's database, secret key, DNS and MX. */
  env(name?: string): Record<string, string>;
  /** Starts `mailsvc serve` as node `name` (the same name again: a restart of that node, on its data directory). */
  serve(name?: string, extra?: Record<string, string>, onSpawn?: (child: ChildProcess) => void): Promise<Served>;
  /** Kills every node still running, then closes the runtime, the DNS and MX, drops the database and removes the directories. */
  close(): Promise<void>;
}

export interface ServeRigOptions {
  /** Names the temp directories. */
  name: string;
  /**
   * Delivery to a loopback MX (hooks, e.g. a slow DATA) through a loopback DNS that routes
   * `dest.test` there; `sender` (default sender.test) verified. Without it delivery is off.
   */
  deliver?: { mx?: Parameters<typeof startMxServer>[0]; sender?: string };
  /** Settings every node gets beyond the rig's (MAILSVC_* variables). */
  env?: Record<string, string>;
}

/**
 * Real `mailsvc serve` processes on one database (a fresh PostgreSQL database when
 * MAILSVC_TEST_POSTGRES is set, else a SQLite file), as an operator runs them, for tests that
 * kill, restart or run several nodes. Every node shares the secret key (it unseals the DKIM
 * keys) and has its own data directory and hostname; kill and stop are on the Served handle.
 */
export async function startServeRig(options: ServeRigOptions): Promise<ServeRig> {
  const root = mkdtempSync(join(tmpdir(), `mailsvc-${options.name}-`));
  const dirs = new Map<string, string>();
  const nodes: Served[] = [];
  const secretKey = randomBytes(32).toString('base64');
  let database: TestDatabase | undefined;
  let dns: TestDns | undefined;
  let mx: TestMx | undefined;
  let runtime: Runtime | undefined;

  const close = async () => {
    for (const node of nodes) await node.kill();
    await runtime?.close();
    await mx?.close();
    await dns?.close();
    await database?.drop();
    rmSync(root, { recursive: true, force: true });
  };

  const env = (name = 'main'): Record<string, string> => {
    let dir = dirs.get(name);
    if (!dir) {
      dir = mkdtempSync(join(root, `${name}-`));
      dirs.set(name, dir);
    }
    return {
      MAILSVC_DATABASE: database!.url,
      MAILSVC_SECRET_KEY: secretKey,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_LOG_LEVEL: 'warn',
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
      MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
      MAILSVC_DELIVERABILITY_CHECK_INTERVAL: '0',
      ...(dns && mx
        ? {
            MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
            MAILSVC_DELIVERY_PORT: String(mx.port),
            MAILSVC_DELIVERY_HOSTNAME: name === 'main' ? 'mta.mailsvc.test' : `mta-${name}.mailsvc.test`,
            MAILSVC_DELIVERY_MTA_STS: 'false',
          }
        : { MAILSVC_DELIVERY_ENABLED: 'false' }),
      ...options.env,
    };
  };

  try {
    // Migrated already (a copy of a template): the nodes and this runtime find nothing to apply.
    database = await testDatabase(join(root, 'mailsvc.db'), { migrated: true });
    if (options.deliver) {
      dns = await startDnsServer();
      mx = await startMxServer(options.deliver.mx);
      routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    }
    runtime = await openRuntime(loadConfig({ env: env('setup') }), { logger: createLogger('silent') });
    const workspaceId = (await runtime.services.workspaces.ensureDefault()).id;
    const key = (await runtime.services.credentials.createKey({ name: options.name, workspaceId })).secret;
    if (options.deliver)
      await verifyDomainWith(runtime.services.domains, dns!, options.deliver.sender ?? 'sender.test', workspaceId);
    return {
      dir: root,
      database,
      runtime,
      workspaceId,
      key,
      get dns(): TestDns {
        if (!dns) throw new Error('this rig does not deliver (no `deliver` option)');
        return dns;
      },
      get mx(): TestMx {
        if (!mx) throw new Error('this rig does not deliver (no `deliver` option)');
        return mx;
      },
      env,
      async serve(name, extra = {}, onSpawn) {
        const node = await serveCli({ ...env(name), ...extra }, onSpawn);
        nodes.push(node);
        return node;
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
