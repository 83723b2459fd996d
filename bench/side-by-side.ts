import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { postMany } from './delivery.js';
import { cpuSeconds, fmt, median, peakRssMb, root, serve, statementsOf } from './lib.js';
import { startPostfix, waitForSink, type Postfix } from './postfix.js';
import { sinkBench } from './sink-bench.js';

/**
 * Issue 23's table: the product and Postfix side by side in one run, every figure end to end
 * (from the first connection until the loopback sink has every message), medians of
 * BENCH_RUNS runs of BENCH_MESSAGES (default 10,000) 2 KB messages from 20 client sessions.
 *
 * - Postfix plain and Postfix + OpenDKIM (RSA-2048), driven by smtp-source with reuse (-d).
 * - mailsvc over SMTP with reuse, driven by bench/smtp-load-process.ts with STARTTLS + AUTH.
 * - mailsvc over HTTP: POST /v1/emails from autocannon, 50 connections, closed loop.
 * - One message per connection with STARTTLS (BENCH_EACH messages, default 2,000): Postfix
 *   plain given the same certificate, and mailsvc with AUTH as well, both driven by the same
 *   TLS-capable load generator (smtp-source cannot speak TLS). BENCH_CERT=ecdsa gives both
 *   a P-256 certificate instead of RSA-2048.
 *
 * The product runs on its defaults except: the destination limit raised to Postfix's
 * (20 connections, no rate cap), the workspace's plan limits raised (so the API's send limits
 * do not meter a bench), and the submission listener given the bench's certificate.
 * CPU per delivered message counts every thread of the product's process (/proc).
 */
export async function sideBySide(options: { messages: number; each: number; runs: number }): Promise<void> {
  const { messages, each, runs } = options;
  const ecdsa = process.env.BENCH_CERT === 'ecdsa';
  const { cert, dns, sink, submissionPort, env, key, body } = await sinkBench('side', ecdsa ? 'ecdsa' : 'rsa');

  const server = await serve(env);
  const pid = server.process.pid!;
  const postfix: { plain: Postfix | null; dkim: Postfix | null } = { plain: null, dkim: null };
  type Row = 'smtp' | 'http' | 'each';
  const figures: Record<string, number[]> = {};
  let peak: number | null = null;
  const add = (name: string, value: number) => (figures[name] ??= []).push(value);
  try {
    if (!process.env.BENCH_NO_POSTFIX) {
      postfix.plain = await startPostfix({ sink, dkim: false, tls: cert });
      postfix.dkim = await startPostfix({ sink, dkim: true, tls: cert });
    }
    /** End to end: runs `load`, resolves with messages per second once the sink has `n` more. */
    const endToEnd = async (n: number, load: () => Promise<unknown>): Promise<number> => {
      const base = sink.count();
      const t0 = performance.now();
      await load();
      return (n / ((await waitForSink(sink, base + n, 20 * 60_000)) - t0)) * 1000;
    };
    const mailsvc = async (row: Row, n: number, load: () => Promise<unknown>) => {
      const [c0, s0] = [cpuSeconds(pid)!, await statementsOf(server.url)];
      add(`mailsvc ${row}`, await endToEnd(n, load));
      add(`mailsvc ${row} cpu`, ((cpuSeconds(pid)! - c0) * 1000) / n);
      // The threads report their counts each second.
      await new Promise((r) => setTimeout(r, 1100));
      add(`mailsvc ${row} statements`, ((await statementsOf(server.url)) - s0) / n);
    };
    const smtpLoad = (port: number, n: number, reuse: boolean, auth: boolean) => () =>
      loadGenerator({
        port,
        messages: n,
        sessions: 20,
        reuse,
        starttls: true,
        ...(auth ? { auth: { user: 'apikey', pass: key } } : {}),
        size: 2000,
        from: 'orders@bench.example',
        to: 'customer@sink.bench',
      });

    // Warm-up: JIT, the signing threads, connections to the sink.
    await endToEnd(500, () => postMany(server.url, key, body, 500, 50));
    await endToEnd(500, smtpLoad(submissionPort, 500, true, true));
    for (const pf of [postfix.plain, postfix.dkim]) if (pf) await endToEnd(200, () => pf.send(200, { reuse: true }));

    for (let run = 0; run < runs; run++) {
      if (postfix.dkim)
        add('postfix+dkim smtp', await endToEnd(messages, () => postfix.dkim!.send(messages, { reuse: true })));
      if (postfix.plain)
        add('postfix smtp', await endToEnd(messages, () => postfix.plain!.send(messages, { reuse: true })));
      await mailsvc('smtp', messages, smtpLoad(submissionPort, messages, true, true));
      let latency = { p50: 0, p99: 0 };
      await mailsvc('http', messages, async () => {
        const r = await postMany(server.url, key, body, messages, 50);
        if (r.non2xx + r.errors > 0) throw new Error(`HTTP: ${r.non2xx} non-2xx, ${r.errors} errors`);
        latency = r;
      });
      add('mailsvc http p50', latency.p50);
      add('mailsvc http p99', latency.p99);
      if (postfix.plain) add('postfix each', await endToEnd(each, smtpLoad(postfix.plain.port, each, false, false)));
      await mailsvc('each', each, smtpLoad(submissionPort, each, false, true));
      console.log(
        `  run ${run + 1}: ${Object.entries(figures)
          .map(([k, v]) => `${k} ${fmt(v[v.length - 1]!, /cpu|statements/.test(k) ? 2 : 0)}`)
          .join('; ')}`,
      );
    }
    peak = peakRssMb(pid);
  } finally {
    await postfix.plain?.stop();
    await postfix.dkim?.stop();
    await server.stop();
    await sink.stop();
    await dns.close();
  }

  const m = (name: string) => (figures[name] ? median(figures[name]) : null);
  const rate = (x: number | null) => (x === null ? 'n/a' : `${fmt(x)} msg/s`);
  const ratio = (a: number | null, b: number | null) => (a === null || b === null ? 'n/a' : `${fmt(a / b, 2)}×`);
  console.log(
    `side by side, ${runs} runs (medians), ${fmt(messages)} messages of 2 KB (${fmt(each)} one per connection), 20 sessions, ${ecdsa ? 'ECDSA P-256' : 'RSA-2048'} certificate, sink: ${sink.kind}`,
  );
  console.log(`  Postfix + OpenDKIM, SMTP with reuse:        ${rate(m('postfix+dkim smtp'))}`);
  console.log(`  Postfix plain, SMTP with reuse:             ${rate(m('postfix smtp'))}`);
  console.log(
    `  mailsvc, SMTP with reuse (STARTTLS + AUTH): ${rate(m('mailsvc smtp'))} = ${ratio(m('mailsvc smtp'), m('postfix smtp'))} Postfix plain (target >= 1.2), ${ratio(m('mailsvc smtp'), m('postfix+dkim smtp'))} Postfix + OpenDKIM; CPU ${fmt(m('mailsvc smtp cpu') ?? 0, 2)} ms/msg, ${fmt(m('mailsvc smtp statements') ?? 0, 1)} statements/msg`,
  );
  console.log(
    `  mailsvc, HTTP POST /v1/emails (50 conns):   ${rate(m('mailsvc http'))} = ${ratio(m('mailsvc http'), m('postfix smtp'))} Postfix plain (target >= 1.0); p50 ${fmt(m('mailsvc http p50') ?? 0)} ms, p99 ${fmt(m('mailsvc http p99') ?? 0)} ms; CPU ${fmt(m('mailsvc http cpu') ?? 0, 2)} ms/msg, ${fmt(m('mailsvc http statements') ?? 0, 1)} statements/msg`,
  );
  console.log(`  Postfix plain, one per connection, STARTTLS: ${rate(m('postfix each'))}`);
  console.log(
    `  mailsvc, one per connection, STARTTLS + AUTH: ${rate(m('mailsvc each'))} = ${ratio(m('mailsvc each'), m('postfix each'))} Postfix (target >= 1.0); CPU ${fmt(m('mailsvc each cpu') ?? 0, 2)} ms/msg`,
  );
  console.log(`  mailsvc peak RSS: ${fmt(peak ?? 0)} MB (target < 250)`);
}

interface LoadOptions {
  port: number;
  messages: number;
  sessions: number;
  reuse: boolean;
  starttls: boolean;
  auth?: { user: string; pass: string };
  size: number;
  from: string;
  to: string;
}

/** Runs bench/smtp-load-process.ts; rejects when any message was refused. */
export function loadGenerator(options: LoadOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'bench/smtp-load-process.ts'), JSON.stringify(options)],
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`SMTP load generator exited ${code}`));
      const r = JSON.parse(out) as { accepted: number; failed: number; firstError: string | null };
      if (r.failed > 0)
        return reject(new Error(`SMTP load generator: ${r.failed} of ${options.messages} refused (${r.firstError})`));
      resolve();
    });
  });
}
