import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import pg from 'pg';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { serveCli, type Served } from '../helpers/cli.js';
import { routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { verifyDomainWith } from '../helpers/domains.js';
import { request, type ApiResponse } from '../helpers/http.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/**
 * What the fault tests share: a real `mailsvc serve` process (so that a crash is an exit, as
 * an operator would see it), delivering through a loopback DNS server to a loopback MX, with a
 * key and a verified sending domain made beforehand through the services.
 */

/** The PostgreSQL server the fault tests use (they stop and restart it: .ci/run runs them alone). */
export const faultsPostgres = (): string =>
  process.env.MAILSVC_TEST_POSTGRES || 'postgres://postgres@127.0.0.1:5432/test';

/** Why PostgreSQL fault tests cannot run here, or null when they can. */
export async function postgresUnavailable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: faultsPostgres(), connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    return `PostgreSQL at ${faultsPostgres()} is not reachable (${(err as Error).message})`;
  } finally {
    await client.end().catch(() => {});
  }
}

export interface FaultRig {
  dir: string;
  dns: TestDns;
  mx: TestMx;
  env: Record<string, string>;
  key: string;
  /** The test database when on PostgreSQL. */
  database: TestDatabase | null;
  serve(extra?: Record<string, string>): Promise<Served>;
  close(): Promise<void>;
}

export async function faultRig(options: {
  database: 'postgres' | { sqliteFile: string; dataDir: string };
  env?: Record<string, string>;
}): Promise<FaultRig> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-faults-'));
  const database = options.database === 'postgres' ? await createTestDatabase(faultsPostgres()) : null;
  const dns = await startDnsServer();
  const mx = await startMxServer();
  routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
  const env: Record<string, string> = {
    MAILSVC_DATABASE: database ? database.url : `sqlite:${(options.database as { sqliteFile: string }).sqliteFile}`,
    MAILSVC_DATA_DIR: database ? dir : (options.database as { dataDir: string }).dataDir,
    MAILSVC_LOG_LEVEL: 'warn',
    MAILSVC_LOG_FORMAT: 'json',
    MAILSVC_HTTP_PORT: '0',
    MAILSVC_SMTP_SUBMISSION_PORT: '0',
    MAILSVC_SMTP_SUBMISSION_TLS_PORT: '0',
    MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
    MAILSVC_DELIVERABILITY_CHECK_INTERVAL: '0',
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_PORT: String(mx.port),
    MAILSVC_DELIVERY_HOSTNAME: 'mta.mailsvc.test',
    MAILSVC_DELIVERY_LEASE_SECONDS: '5',
    MAILSVC_DELIVERY_RETRY_SCHEDULE: '[1]',
    MAILSVC_DELIVERY_POLL_INTERVAL: '100',
    MAILSVC_DELIVERY_MTA_STS: 'false',
    ...options.env,
  };
  const runtime = await openRuntime(loadConfig({ env }), { logger: createLogger('silent') });
  let key: string;
  try {
    const workspaceId = (await runtime.services.workspaces.ensureDefault()).id;
    key = (await runtime.services.credentials.createKey({ name: 'faults', workspaceId })).secret;
    await verifyDomainWith(runtime.services.domains, dns, 'sender.test', workspaceId);
  } finally {
    await runtime.close();
  }
  const served: Served[] = [];
  return {
    dir,
    dns,
    mx,
    env,
    key,
    database,
    async serve(extra = {}) {
      const s = await serveCli({ ...env, ...extra });
      served.push(s);
      return s;
    },
    async close() {
      for (const s of served) if (s.alive()) await s.stop();
      await mx.close();
      await dns.close();
      await database?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One send through the API; the body names the recipient so that the MX can tell messages apart. */
export function send(url: string, key: string, n: number): Promise<ApiResponse> {
  return request(url, 'POST', '/v1/emails', {
    key,
    body: { from: 'Shop <hello@sender.test>', to: `r${n}@dest.test`, subject: `Order ${n}`, html: `<p>Order ${n}</p>` },
  });
}

/**
 * Asserts an answer is one a client can act on during a fault: 2xx, or a retryable refusal of
 * the fault class (503 with Retry-After, `retryable: true`). Returns whether it was accepted.
 */
export function acceptedOrRefused(res: ApiResponse, node?: Served): boolean {
  if (res.status >= 200 && res.status < 300) return true;
  assert.equal(
    res.status,
    503,
    `a fault is a 503, got ${res.status} ${res.text.slice(0, 300)}${node ? `\nthe node's log:\n${node.output().slice(-3000)}` : ''}`,
  );
  assert.ok(['storage_unavailable', 'storage_full'].includes(res.body?.error?.code), res.text);
  assert.equal(res.body.error.retryable, true);
  assert.match(res.headers.get('retry-after') ?? '', /^\d+$/);
  return false;
}

/** Waits until the MX has every accepted message (by Message-ID) or the time runs out; returns what is missing. */
export async function undelivered(mx: TestMx, ids: Iterable<string>, timeoutMs: number): Promise<string[]> {
  const wanted = [...ids].map((id) => `<${id}@sender.test>`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = new Set(mx.messages.map((m) => m.messageId));
    const missing = wanted.filter((id) => !got.has(id));
    if (missing.length === 0 || Date.now() > deadline) return missing;
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface SmtpAnswer {
  accepted: boolean;
  /** The reply code of the command that refused, when refused. */
  code: number | null;
  /** The command it refused at (AUTH, MAIL FROM, DATA, …), as nodemailer names it. */
  command: string | null;
  response: string;
}

/** One message through SMTP submission with a real client (nodemailer), AUTH with the API key. */
export async function smtpSend(port: number, key: string, n: number, html = `<p>Order ${n}</p>`): Promise<SmtpAnswer> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    auth: { user: 'smtp', pass: key },
  });
  try {
    const info = await transport.sendMail({
      from: 'Shop <hello@sender.test>',
      to: `s${n}@dest.test`,
      subject: `Order ${n}`,
      html,
    });
    return { accepted: true, code: null, command: null, response: info.response };
  } catch (err) {
    const e = err as { responseCode?: number; command?: string; response?: string; message: string };
    return {
      accepted: false,
      code: e.responseCode ?? null,
      command: e.command ?? null,
      response: e.response ?? e.message,
    };
  } finally {
    transport.close();
  }
}
