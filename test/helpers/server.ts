import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import type { Config } from '../../src/config/schema.js';
import { startServer, type RunningServer } from '../../src/main.js';
import type { PolicyFetcher } from '../../src/delivery/mta-sts.js';
import type { Clock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { copySqliteTemplate } from './migrated-template.js';
import { createTestDatabase, testPostgresUrl } from './postgres.js';

export interface TestServer extends RunningServer {
  config: Config;
  dir: string;
  /** Creates a key through the same service the CLI uses; returns the secret. */
  key(options?: { test?: boolean; master?: boolean; workspaceId?: string }): Promise<string>;
  workspaceId: string;
  close(): Promise<void>;
}

/**
 * The real server, in this process, on free loopback ports with a fresh SQLite file in a
 * temp directory, or a fresh PostgreSQL database when MAILSVC_TEST_POSTGRES is set. `overrides` has the shape of the config file.
 */
export async function startTestServer(
  overrides: Record<string, unknown> = {},
  options: { clock?: Clock; mtaStsFetcher?: PolicyFetcher } = {},
): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-test-'));
  // A database of its own, migrated already (a copy of a template: the migrations are a
  // second or more of every start); a test that names its database gets it as it is.
  const own = !('database' in overrides);
  const pgDatabase = testPostgresUrl() && own ? await createTestDatabase(undefined, { migrated: true }) : null;
  if (own && !pgDatabase) await copySqliteTemplate(join(dir, 'mailsvc.db'));
  const base = {
    database: pgDatabase?.url ?? `sqlite:${join(dir, 'mailsvc.db')}`,
    dataDir: dir,
    log: { level: process.env.MAILSVC_TEST_LOG ?? 'silent' },
    http: { port: 0 },
    smtp: { submission: { port: 0, tlsPort: 0 } },
    domains: { recheckInterval: 0 },
    // Background DNS checks of every domain: only tests of them turn them on.
    deliverability: { checkInterval: 0 },
    // Delivery runs only for tests that give it their own loopback DNS server (or a relay).
    delivery: { enabled: deliveryTarget(overrides) },
  };
  const config = loadConfig({ env: {}, overrides: deepMerge(base, overrides) });
  if (config.delivery.enabled && config.delivery.dnsServers.length === 0 && !config.delivery.relay) {
    throw new Error(
      'a test that delivers must set delivery.dnsServers to its loopback DNS server (never the real network)',
    );
  }
  let server: RunningServer;
  try {
    server = await startServer(config, {
      logger: createLogger(config.log.level),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.mtaStsFetcher ? { mtaStsFetcher: options.mtaStsFetcher } : {}),
    });
  } catch (err) {
    await pgDatabase?.drop();
    throw err;
  }
  const workspaceId = (await server.runtime.services.workspaces.ensureDefault()).id;
  return {
    ...server,
    config,
    dir,
    workspaceId,
    async key(options = {}) {
      const created = await server.runtime.services.credentials.createKey({
        name: 'test',
        test: options.test,
        master: options.master,
        workspaceId: options.master ? null : (options.workspaceId ?? workspaceId),
      });
      return created.secret;
    },
    async close() {
      try {
        await server.stop();
      } finally {
        await pgDatabase?.drop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

function deliveryTarget(overrides: Record<string, unknown>): boolean {
  const d = (overrides.delivery ?? {}) as { dnsServers?: unknown[]; relay?: unknown };
  return (d.dnsServers?.length ?? 0) > 0 || Boolean(d.relay);
}

export function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && prev && typeof prev === 'object' && !Array.isArray(prev)
        ? deepMerge(prev as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/** A clock that stands still until moved: for tests of windows and schedules. */
export function manualClock(start = Date.now()): Clock & { set(ms: number): void; advance(ms: number): void } {
  let now = start;
  return {
    now: () => now,
    set: (ms) => {
      now = ms;
    },
    advance: (ms) => {
      now += ms;
    },
  };
}
