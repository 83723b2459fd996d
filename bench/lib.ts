import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createNetServer } from 'node:net';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestDns } from '../test/helpers/dns-server.js';
import { launchEnv, launchFlags } from '../scripts/launch-flags.js';
import { newId } from '../src/shared/ids.js';
import { repoRoot } from '../scripts/repo-root.js';

export const root = `${repoRoot}/`;
const bin = join(root, 'dist/src/cli/bin.js');

export interface BenchServer {
  url: string;
  env: Record<string, string>;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * A fresh data directory and the environment that points `mailsvc` at it. BENCH_ENV (a JSON
 * object of MAILSVC_* variables) changes settings for a comparison, e.g. '{"MAILSVC_DELIVERY_WORKERS":"0"}'.
 */
export function benchEnv(extra: Record<string, string> = {}): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-bench-'));
  return {
    PATH: process.env.PATH ?? '',
    MAILSVC_DATABASE: `sqlite:${join(dir, 'mailsvc.db')}`,
    MAILSVC_DATA_DIR: dir,
    MAILSVC_HTTP_PORT: '0',
    MAILSVC_LOG_LEVEL: 'warn',
    MAILSVC_SMTP_SUBMISSION_PORT: '0',
    MAILSVC_SMTP_SUBMISSION_TLS_PORT: '0',
    ...extra,
    ...(process.env.BENCH_ENV ? (JSON.parse(process.env.BENCH_ENV) as Record<string, string>) : {}),
  };
}

/** Runs a CLI command of the built program and returns its stdout. */
export function cli(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`mailsvc ${args.join(' ')}: ${err}`))));
  });
}

/**
 * Starts the built `mailsvc serve` as its own process, as an operator would (with the launcher's
 * Node.js options).
 * BENCH_SERVER_NODE_ARGS adds node flags, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`;
 * BENCH_SERVER_STDERR=1 passes its log (stderr) through.
 */
export function serve(env: Record<string, string>): Promise<BenchServer> {
  return new Promise((resolve, reject) => {
    const flags = [
      ...launchFlags(root),
      ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/cpuprof'] : []),
      ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    ];
    const child = spawn(process.execPath, [...flags, bin, 'serve'], {
      env: { ...launchEnv(root), ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 30_000);
    child.stderr.on('data', (d) => {
      if (process.env.BENCH_SERVER_STDERR) process.stderr.write(d);
      err += d;
      const m = /HTTP API on (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1]!,
          env,
          process: child,
          stop: () =>
            new Promise<void>((done) => {
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Peak and current resident memory of a process, from /proc (Linux), in MB. */
export const peakRssMb = (pid: number): number | null => procStatusMb(pid, 'VmHWM');
export const rssMb = (pid: number): number | null => procStatusMb(pid, 'VmRSS');

function procStatusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1];
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

export interface LoadResult {
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** HTTP load from a separate process (autocannon), so the generator does not share our event loop: for a duration or a number of requests. */
export function httpLoad(
  options: {
    url: string;
    method: string;
    headers: Record<string, string>;
    body: string;
    connections: number;
    timeoutSeconds?: number;
  } & ({ seconds: number } | { amount: number }),
): Promise<LoadResult> {
  const span = 'seconds' in options ? ['-d', String(options.seconds)] : ['-a', String(options.amount)];
  const args = [
    join(root, 'node_modules/autocannon/autocannon.js'),
    '-j',
    '-c',
    String(options.connections),
    ...span,
    '-m',
    options.method,
    '-b',
    options.body,
    '-t',
    String(options.timeoutSeconds ?? 10),
  ];
  for (const [k, v] of Object.entries(options.headers)) args.push('-H', `${k}=${v}`);
  args.push(options.url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited ${code}`));
      const r = JSON.parse(out);
      resolve({
        requests: r.requests.total,
        perSecond: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        non2xx: r.non2xx,
        errors: r.errors,
      });
    });
  });
}

/** Median of a list of numbers. */
export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** CPU seconds (user + system, all threads) a process has used, from /proc (Linux). */
export const cpuSeconds = (pid: number): number | null => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
};

/** A loopback port free at the time of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Adds bench.example through the CLI, publishes its records in the bench's DNS server and verifies it. */
export async function verifiedBenchDomain(env: Record<string, string>, dns: TestDns): Promise<void> {
  await cli(['domains', 'add', 'bench.example'], env);
  const records = JSON.parse(await cli(['domains', 'dns', 'bench.example', '--json'], env));
  for (const r of records.customer) dns.set(r.name, 'CNAME', [r.value]);
  for (const r of records.dkim_host) dns.set(r.name, 'TXT', [r.value]);
  await cli(['domains', 'verify', 'bench.example'], env);
}

export interface OpenLoopResult {
  due: number;
  completed: number;
  non2xx: number;
  errors: number;
  lost: number;
  seconds: number;
  /** Answered requests per second, from the first due to the last answer. */
  achieved: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

/** Open-loop (fixed-rate) HTTP load from its own process (bench/open-loop-process.ts); latencies in ms from when each request was due. */
export function openLoopLoad(options: {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  rate: number;
  seconds: number;
}): Promise<OpenLoopResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'bench/open-loop-process.ts'), JSON.stringify(options)],
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as OpenLoopResult) : reject(new Error(`open-loop load exited ${code}`)),
    );
  });
}

/** A metric of the server's /metrics, summed over the label sets that have every label of `labels`. */
export async function metricOf(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^([a-z_]+)(?:\{([^}]*)\})? ([0-9.e+-]+)$/gm)) {
    if (m[1] !== name) continue;
    const have = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.split(',').includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}

/** Statements the server sent to its database so far (BEGIN and COMMIT included). */
export const statementsOf = (url: string): Promise<number> => metricOf(url, 'mailsvc_db_statements_total');

/** Subscriber n of a bench's audience (user<n>@domain), as a row written straight to the store. */
export const benchSubscriber = (workspaceId: string, n: number, domain: string, at: number) => ({
  id: newId(),
  workspace_id: workspaceId,
  email: `user${n}@${domain}`,
  email_key: `user${n}@${domain}`,
  first_name: `User${n}`,
  last_name: null,
  status: 'subscribed' as const,
  domain_id: null,
  external_id: null,
  metadata: null,
  source: 'bench',
  created_at: at,
  updated_at: at,
  unsubscribed_at: null,
});
