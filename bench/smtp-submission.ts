import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { benchEnv, cpuSeconds, fmt, freePort, median, root, serve, verifiedBenchDomain } from './lib.js';
import { startPostfix } from './postfix.js';
import { postfixTool, startSink } from './smtp-sink.js';

const sequence = async <T>(n: number, f: () => Promise<T>): Promise<T[]> => {
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(await f());
  return out;
};

/**
 * Issue 5 target: submission acceptance with Postfix's smtp-source (20 sessions, 2 KB
 * messages) >= 1,000 msg/s durable, next to a bare smtp-server on the same machine.
 * smtp-source cannot AUTH, so the listener trusts loopback (smtp.submission.trustedNetworks,
 * as Postfix's mynetworks would). Runs with connection reuse (-d) and one message per
 * connection (PHPMailer, WordPress); the submission listeners greet at once, where a bare
 * smtp-server waits a fixed 100 ms. Postfix, plain and with OpenDKIM, accepts the same load in
 * the same run (issue 14 target: one message per connection >= 1.0 x Postfix plain).
 */
export async function smtpSubmission(options: { messages: number; runs: number }): Promise<void> {
  const source = postfixTool('smtp-source');
  if (!source) {
    console.log('smtp-source is not installed (apt-get install postfix): skipped');
    return;
  }
  const dns = await startDnsServer();
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_ENABLED: 'false',
    MAILSVC_WEBHOOKS_ENABLED: 'false',
    MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
    MAILSVC_SMTP_SUBMISSION_TRUSTED_NETWORKS: '["127.0.0.1/32"]',
    MAILSVC_SMTP_SUBMISSION_IMPLICIT_TLS: 'false',
    MAILSVC_SMTP_SUBMISSION_PORT: String(await freePort()),
  });
  await verifiedBenchDomain(env, dns);

  const run = (port: number, messages: number, reuse: boolean) => {
    const args = [
      '-s',
      '20',
      '-m',
      String(messages),
      '-l',
      '2048',
      '-f',
      'app@bench.example',
      '-t',
      'someone@example.org',
      ...(reuse ? ['-d'] : []),
      `127.0.0.1:${port}`,
    ];
    const t0 = performance.now();
    const result = spawnSync(source, args, { encoding: 'utf8', timeout: 600_000 });
    if (result.status !== 0) throw new Error(`smtp-source failed: ${result.stderr}`);
    return messages / ((performance.now() - t0) / 1000);
  };

  // The bare smtp-server first, in its own process.
  const raw = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/raw-smtp-server-process.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const rawPort = await new Promise<number>((resolve) =>
    raw.stdout.once('data', (d) => resolve(Number(String(d).trim()))),
  );
  const rawReuse = median(Array.from({ length: options.runs }, () => run(rawPort, options.messages, true)));
  const rawEach = median(
    Array.from({ length: options.runs }, () => run(rawPort, Math.min(options.messages, 2000), false)),
  );
  raw.kill();

  const server = await serve(env);
  let reference: { reuse: number; each: number } | undefined;
  try {
    const port = Number(env.MAILSVC_SMTP_SUBMISSION_PORT);
    const reuse: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < options.runs; i++) {
      const c0 = cpuSeconds(server.process.pid!);
      reuse.push(run(port, options.messages, true));
      const c1 = cpuSeconds(server.process.pid!);
      if (c0 !== null && c1 !== null) cpu.push(((c1 - c0) * 1000) / options.messages);
    }
    const each = median(Array.from({ length: options.runs }, () => run(port, Math.min(options.messages, 2000), false)));
    console.log(`SMTP submission with smtp-source (20 sessions, 2 KB messages, ${options.runs} runs, medians)`);
    console.log(
      `  mailsvc, connection reuse (-d): ${fmt(median(reuse))} msg/s durable (runs ${reuse.map((r) => fmt(r)).join(', ')}); server CPU ${fmt(median(cpu), 2)} ms/msg (target >= 1,000 msg/s)`,
    );
    console.log(`  mailsvc, one message per connection: ${fmt(each)} msg/s`);
    console.log(
      `  bare smtp-server, same machine: ${fmt(rawReuse)} msg/s with reuse, ${fmt(rawEach)} msg/s one per connection`,
    );
    console.log(`  ratio mailsvc / bare smtp-server with reuse: ${(median(reuse) / rawReuse).toFixed(2)}`);
    reference = { reuse: median(reuse), each };
  } finally {
    await server.stop();
    await dns.close();
  }

  // Postfix in the same run, accepting (queue file fsync'd before its 250) the same load.
  if (process.env.BENCH_NO_POSTFIX) return console.log('  Postfix: skipped (BENCH_NO_POSTFIX)');
  const sink = await startSink();
  try {
    for (const dkim of [false, true]) {
      const pf = await startPostfix({ sink, dkim });
      if (!pf) {
        console.log(
          `  Postfix${dkim ? ' + OpenDKIM' : ''}: not installed (apt-get install postfix opendkim opendkim-tools; needs root), no reference run`,
        );
        continue;
      }
      try {
        const accept = async (n: number, reuse: boolean) => {
          const t0 = performance.now();
          await pf.send(n, { reuse, size: 2048 });
          return n / ((performance.now() - t0) / 1000);
        };
        const pfReuse = median(await sequence(options.runs, () => accept(options.messages, true)));
        const pfEach = median(await sequence(options.runs, () => accept(Math.min(options.messages, 2000), false)));
        const name = dkim ? 'Postfix + OpenDKIM' : 'Postfix plain';
        console.log(
          `  ${name}, same run: ${fmt(pfReuse)} msg/s with reuse, ${fmt(pfEach)} msg/s one message per connection`,
        );
        console.log(
          `  mailsvc / ${name}: ${fmt(reference.reuse / pfReuse, 2)} with reuse, ${fmt(reference.each / pfEach, 2)} one message per connection${dkim ? '' : ' (target >= 1.0)'}`,
        );
      } finally {
        await pf.stop();
      }
    }
  } finally {
    await sink.stop();
  }
}
