import { mkdtempSync, rmSync } from 'node:fs';
import { fork } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/load-config.js';
import { recordEvent } from '../src/events/record-event.js';
import { startServer } from '../src/main.js';
import { createLogger } from '../src/shared/logger.js';
import { repoPath } from '../scripts/repo-root.js';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const EVENTS_PER_TRANSACTION = 100;
const PACED_RATE = 500; // events/s for the latency run
const PACED_SECONDS = 4;

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** The receiver runs in a child process, so its HTTP work does not share our event loop. */
async function startReceiver() {
  const child = fork(repoPath('bench/webhook-receiver-process.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('error', reject);
  });
  const ask = (count: number) =>
    new Promise<{ count: number; arrivals?: Array<[string, number]> }>((resolve) => {
      child.once('message', resolve);
      child.send({ get: count });
    });
  return {
    url: `http://127.0.0.1:${port}/hook`,
    /** Waits (bounded) until `count` webhooks arrived; returns event id -> arrival time. */
    async waitFor(count: number, timeoutMs: number): Promise<Map<string, number>> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const answer = await ask(count);
        if (answer.arrivals) return new Map(answer.arrivals);
        if (Date.now() > deadline) throw new Error(`only ${answer.count} of ${count} deliveries after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => {
      child.disconnect();
    },
  };
}

async function scenario(
  label: string,
  emit: (record: (n: number) => Promise<string[]>) => Promise<Array<{ id: string; at: number }>>,
  total: number,
) {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-bench-'));
  const receiver = await startReceiver();
  const config = loadConfig({
    env: {},
    overrides: {
      database: `sqlite:${join(dir, 'db.sqlite')}`,
      dataDir: dir,
      log: { level: 'silent' },
      http: { port: 0 },
      domains: { recheckInterval: 0 },
      webhooks: {
        allowPrivateNetworks: true,
        ...(process.env.BENCH_PER_ENDPOINT ? { perEndpointConcurrency: Number(process.env.BENCH_PER_ENDPOINT) } : {}),
      },
    },
  });
  const server = await startServer(config, { logger: createLogger('silent') });
  try {
    const ws = await server.runtime.services.workspaces.ensureDefault();
    await server.runtime.services.webhooks.register(ws.id, 'v1', { url: receiver.url, events: ['*'] });
    const record = (n: number) =>
      server.runtime.store.db.transaction().execute(async (trx) => {
        const ids: string[] = [];
        const at = Date.now();
        for (let i = 0; i < n; i++) {
          const row = await recordEvent(trx, {
            workspaceId: ws.id,
            type: 'email.delivered',
            emailId: null,
            data: { email_id: `e${i}`, to: 'bob@example.org', subject: 'Hi' },
            at,
          });
          ids.push(row.id);
        }
        return ids;
      });
    const started = Date.now();
    const cpuBefore = process.cpuUsage();
    const emitted = await emit(record);
    const emitMs = Date.now() - started;
    const arrivals = await receiver.waitFor(total, 120_000);
    const cpu = process.cpuUsage(cpuBefore);
    const cpuMsPerDelivery = (cpu.user + cpu.system) / 1000 / total;
    const elapsed = Math.max(...arrivals.values()) - started;
    const latencies = emitted.map((e) => arrivals.get(e.id)! - e.at).sort((a, b) => a - b);
    console.log(
      `  ${label}: ${total} events (1 endpoint) emitted in ${emitMs} ms, all delivered in ${elapsed} ms: ` +
        `${Math.round((total / elapsed) * 1000)} deliveries/s; event-to-delivery p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies.at(-1)} ms; ` +
        `server CPU ${cpuMsPerDelivery.toFixed(2)} ms per event+delivery (${Math.round(1000 / cpuMsPerDelivery)}/s per core)`,
    );
  } finally {
    await server.stop();
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Issue 7 target: fan-out of 10,000 events to one endpoint on a loopback receiver (its own
 * process) at >= 1,000 deliveries/s. Events are recorded as the delivery engine records them
 * (recordEvent in a transaction, 100 per transaction) in the server's process, whose CPU per
 * event and delivery is reported too: it does not depend on what else the machine runs.
 */
export async function webhookFanout(): Promise<void> {
  console.log(`webhook fan-out (SQLite synchronous=FULL, 1 endpoint, receiver in its own process)`);
  // Burst: the whole backlog lands at once (100 events per transaction, as fast as SQLite takes them).
  await scenario(
    'burst',
    async (record) => {
      const out: Array<{ id: string; at: number }> = [];
      for (let done = 0; done < EVENTS; done += EVENTS_PER_TRANSACTION) {
        const at = Date.now();
        for (const id of await record(Math.min(EVENTS_PER_TRANSACTION, EVENTS - done))) out.push({ id, at });
      }
      return out;
    },
    EVENTS,
  );
  // Paced: a steady stream, so the latency is the dispatcher's, not the backlog's.
  const perTick = PACED_RATE / 20;
  await scenario(
    `paced ${PACED_RATE}/s`,
    async (record) => {
      const out: Array<{ id: string; at: number }> = [];
      const start = Date.now();
      for (let tick = 0; tick < PACED_SECONDS * 20; tick++) {
        const wait = start + tick * 50 - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const at = Date.now();
        for (const id of await record(perTick)) out.push({ id, at });
      }
      return out;
    },
    PACED_RATE * PACED_SECONDS,
  );
}
