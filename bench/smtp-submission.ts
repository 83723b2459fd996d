import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { benchEnv, cli, cpuSeconds, fmt, freePort, median, root, serve, verifiedBenchDomain } from './lib.js';
import { postfixTool } from './smtp-sink.js';

/**
 * Issue 5 target: submission acceptance with Postfix's smtp-source (20 sessions, 2 KB
 * messages) >= 1,000 msg/s durable, next to a bare smtp-server on the same machine.
 * smtp-source cannot AUTH, so the listener trusts loopback (smtp.submission.trustedNetworks,
 * as Postfix's mynetworks would). Runs with connection reuse (-d) and one message per
 * connection (smtp-server greets after a fixed 100 ms, which caps the second case).
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
    const args = ['-s', '20', '-m', String(messages), '-l', '2048', '-f', 'app@bench.example', '-t', 'someone@example.org', ...(reuse ? ['-d'] : []), `127.0.0.1:${port}`];
    const t0 = performance.now();
    const result = spawnSync(source, args, { encoding: 'utf8', timeout: 600_000 });
    if (result.status !== 0) throw new Error(`smtp-source failed: ${result.stderr}`);
    return messages / ((performance.now() - t0) / 1000);
  };

  // The bare smtp-server first, in its own process.
  const raw = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/raw-smtp-server-process.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const rawPort = await new Promise<number>((resolve) => raw.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
  const rawReuse = median(Array.from({ length: options.runs }, () => run(rawPort, options.messages, true)));
  const rawEach = median(Array.from({ length: options.runs }, () => run(rawPort, Math.min(options.messages, 2000), false)));
  raw.kill();

  const server = await serve(env);
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
    console.log(`  mailsvc, connection reuse (-d): ${fmt(median(reuse))} msg/s durable (runs ${reuse.map((r) => fmt(r)).join(', ')}); server CPU ${fmt(median(cpu), 2)} ms/msg (target >= 1,000 msg/s)`);
    console.log(`  mailsvc, one message per connection: ${fmt(each)} msg/s`);
    console.log(`  bare smtp-server, same machine: ${fmt(rawReuse)} msg/s with reuse, ${fmt(rawEach)} msg/s one per connection`);
    console.log(`  ratio mailsvc / bare smtp-server with reuse: ${(median(reuse) / rawReuse).toFixed(2)}`);
  } finally {
    await server.stop();
    await dns.close();
  }
}
