import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config/load-config.js';
import { migrateToLatest, openStore } from '../src/store/infra/db.js';
import { cpuSeconds, fmt, httpLoad, peakRssMb, rssMb, serve, benchSubscriber } from './lib.js';
import { waitForSink } from './postfix.js';
import { loadGenerator } from './side-by-side.js';
import { sinkBench } from './sink-bench.js';

/**
 * Issue 34: memory the way it is spent, per thread (the main thread and its pool, each
 * delivery thread and its signing threads: heap, young generation, external) and for the
 * process (RSS, what is native beyond the isolates, the peak), from the server's /metrics, at
 * three moments of one server:
 *
 * - idle: started, the database holding the campaign's subscribers, nothing sent yet;
 * - load: BENCH_MESSAGES (default 6,000) 2 KB messages by HTTP POST /v1/emails (50
 *   connections) and as many by SMTP with reuse (20 sessions, STARTTLS + AUTH) at once, as in
 *   the side-by-side bench, DKIM-signed and delivered to a loopback sink;
 * - campaign: a campaign to BENCH_CAMPAIGN (default 100,000) subscribers, composed, signed and
 *   delivered (the peak is reset before it: /proc/PID/clear_refs).
 *
 * The peak of each figure is sampled every 250 ms; VmHWM is the kernel's. Shipped defaults
 * except the destination limit (20 connections, no rate cap, as Postfix); BENCH_ENV changes
 * settings (e.g. '{"MAILSVC_DELIVERY_WORKERS":"0"}'). BENCH_HEAP_SNAPSHOT=1 with
 * BENCH_SERVER_NODE_ARGS=--heapsnapshot-signal=SIGUSR2 writes a heap snapshot of the main
 * thread after the load (Heap.*.heapsnapshot in the working directory).
 */
export async function memoryProfile(options: { messages: number; campaign: number }): Promise<void> {
  const { dns, sink, submissionPort, env, key, workspaceId, body } = await sinkBench('memory');
  await writeSubscribers(env, workspaceId, options.campaign);
  const server = await serve(env);
  const pid = server.process.pid!;
  const phases: Phase[] = [];
  try {
    // Idle: the threads have reported (each second) and start-up's garbage is collected.
    await new Promise((r) => setTimeout(r, 3000));
    phases.push({ name: 'idle', peaks: await scrape(server.url), vmhwm: peakRssMb(pid), seconds: 0, messages: 0 });

    const n = options.messages;
    const load = await during(server.url, pid, 2 * n, async () => {
      const base = sink.count();
      await Promise.all([
        // A minute per request, not autocannon's 10 s: on a shared machine a request can wait that long, and this bench measures memory.
        httpLoad({
          url: `${server.url}/v1/emails`,
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
          amount: n,
          connections: 50,
          timeoutSeconds: 60,
        }).then((r) => {
          if (r.non2xx + r.errors > 0) throw new Error(`HTTP: ${r.non2xx} non-2xx, ${r.errors} errors`);
        }),
        loadGenerator({
          port: submissionPort,
          messages: n,
          sessions: 20,
          reuse: true,
          starttls: true,
          auth: { user: 'apikey', pass: key },
          size: 2000,
          from: 'orders@bench.example',
          to: 'customer@sink.bench',
        }),
      ]);
      await waitForSink(sink, base + 2 * n, 20 * 60_000);
    });
    phases.push({ name: `load (${fmt(n)} HTTP + ${fmt(n)} SMTP)`, ...load });

    await new Promise((r) => setTimeout(r, 3000));
    if (process.env.BENCH_HEAP_SNAPSHOT) {
      // What the main thread still holds after the load, as a file for Chrome's memory tab.
      server.process.kill('SIGUSR2');
      await new Promise((r) => setTimeout(r, 15_000));
    }
    phases.push({ name: 'after load, idle', peaks: await scrape(server.url), vmhwm: null, seconds: 0, messages: 0 });

    if (options.campaign > 0) {
      // The campaign's own peak: VmHWM starts again from the RSS of now.
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, '5');
      } catch {
        // Not Linux, or not allowed: VmHWM then includes the load's peak.
      }
      const campaign = await during(server.url, pid, options.campaign, async () => {
        const base = sink.count();
        const res = await fetch(`${server.url}/api/v1/campaigns/send`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            subject: 'Spring sale for {{first_name}}',
            from_name: 'Bench',
            from_email: 'news@bench.example',
            html: `<p>Hello {{first_name}}, {{greeting}}</p>${'<p>Our spring collection is here: new colours, new sizes, and free returns for thirty days.</p>'.repeat(8)}`,
            variables: { greeting: 'hi' },
          }),
        });
        if (!res.ok) throw new Error(`campaign refused: ${res.status} ${await res.text()}`);
        await waitForSink(sink, base + options.campaign, 60 * 60_000);
      });
      phases.push({ name: `campaign (${fmt(options.campaign)})`, ...campaign });
    }
  } finally {
    await server.stop();
    await sink.stop();
    await dns.close();
  }
  print(phases);
}

interface Phase {
  name: string;
  /** The highest value of each `thread kind` (and `process kind`) seen, in bytes. */
  peaks: Map<string, number>;
  vmhwm: number | null;
  seconds: number;
  messages: number;
  /** Server CPU (every thread) per message, in ms: what the sizes cost, steadier than msg/s on a shared machine. */
  cpuMs?: number;
}

async function writeSubscribers(env: Record<string, string>, workspaceId: string, count: number): Promise<void> {
  const store = openStore(loadConfig({ env }).database);
  await migrateToLatest(store);
  const now = Date.now();
  for (let i = 0; i < count; i += 5000) {
    await store.db.transaction().execute(async (trx) => {
      for (let j = i; j < Math.min(i + 5000, count); j += 500) {
        const rows = Array.from({ length: Math.min(500, count - j) }, (_, k) =>
          benchSubscriber(workspaceId, j + k, 'sink.bench', now),
        );
        await trx.insertInto('subscribers').values(rows).execute();
      }
    });
  }
  await store.close();
}

/** The memory gauges of /metrics, keyed `thread kind` or `process kind`. */
async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^mailsvc_thread_memory_bytes\{thread="([^"]+)",kind="([^"]+)"\} (\S+)$/gm))
    out.set(`${m[1]} ${m[2]}`, Number(m[3]));
  for (const m of text.matchAll(/^mailsvc_process_memory_bytes\{kind="([^"]+)"\} (\S+)$/gm))
    out.set(`process ${m[1]}`, Number(m[2]));
  return out;
}

/** Runs `work`, sampling the gauges every 250 ms; the peak of each, the kernel's VmHWM and the time taken. */
async function during(
  url: string,
  pid: number,
  messages: number,
  work: () => Promise<void>,
): Promise<Omit<Phase, 'name'>> {
  const peaks = new Map<string, number>();
  const sample = async () => {
    for (const [k, v] of await scrape(url)) peaks.set(k, Math.max(peaks.get(k) ?? 0, v));
    peaks.set('process rss', Math.max(peaks.get('process rss') ?? 0, (rssMb(pid) ?? 0) * 1024 * 1024));
  };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sample().catch(() => {});
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const t0 = performance.now();
  const c0 = cpuSeconds(pid) ?? 0;
  try {
    await work();
  } finally {
    sampling = false;
    await sampler;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpuMs = (((cpuSeconds(pid) ?? 0) - c0) * 1000) / messages;
  await sample();
  return { peaks, vmhwm: peakRssMb(pid), seconds, messages, cpuMs };
}

const MB = 1024 * 1024;

function print(phases: Phase[]): void {
  const mb = (v: number | undefined) => (v === undefined ? '-' : fmt(v / MB, 1));
  const threads = [
    ...new Set(
      phases.flatMap((p) => [...p.peaks.keys()].filter((k) => !k.startsWith('process ')).map((k) => k.split(' ')[0]!)),
    ),
  ].sort();
  console.log(
    'memory by thread and process, MB (peaks sampled every 250 ms; heap young = the young generation as reserved)',
  );
  for (const p of phases) {
    const rate = p.messages
      ? `, ${fmt(p.seconds, 1)} s, ${fmt(p.messages / p.seconds)} msg/s end to end, ${fmt(p.cpuMs ?? 0, 2)} ms server CPU per message`
      : '';
    console.log(
      `  ${p.name}: RSS ${mb(p.peaks.get('process rss'))}, native ${mb(p.peaks.get('process native'))}${p.vmhwm !== null ? `, VmHWM ${fmt(p.vmhwm, 1)}` : ''}${rate}`,
    );
    console.log(
      `    ${'thread'.padEnd(20)} ${['heap total', 'heap used', 'heap young', 'external', 'arrayBuf', 'heap limit'].map((h) => h.padStart(10)).join(' ')}`,
    );
    for (const t of threads) {
      if (!p.peaks.has(`${t} heap_total`)) continue;
      const cells = ['heap_total', 'heap_used', 'heap_young', 'external', 'array_buffers', 'heap_limit'].map((k) =>
        mb(p.peaks.get(`${t} ${k}`)).padStart(10),
      );
      console.log(`    ${t.padEnd(20)} ${cells.join(' ')}`);
    }
  }
}
