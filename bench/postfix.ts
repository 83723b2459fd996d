import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './lib.js';
import { freePort, postfixTool, waitForPort, type Sink } from './smtp-sink.js';

/** A private Postfix instance on loopback, relaying only to the bench's sink. */
export interface Postfix {
  /** Its smtpd port on 127.0.0.1. */
  port: number;
  dkim: boolean;
  /**
   * Submits `n` messages with smtp-source (20 sessions, 2,000-byte bodies); resolves when
   * smtp-source has had a 250 for each, i.e. every message is in Postfix's queue.
   * `reuse`: several messages per connection (-d).
   */
  send(n: number, options?: { reuse?: boolean; sessions?: number; size?: number }): Promise<void>;
  /** Messages waiting in the deferred queue (with `defer: true`, everything submitted ends there). */
  deferredCount(): number;
  /** `postqueue -f`: deliver everything queued now. */
  flush(): void;
  stop(): Promise<void>;
}

export interface PostfixOptions {
  sink: Sink;
  /** OpenDKIM as Postfix's milter, signing every message (RSA-2048, relaxed/relaxed). */
  dkim: boolean;
  /** `defer_transports = smtp`: accept and queue, deliver only on `postqueue -f`. */
  defer?: boolean;
  /** A certificate and key (PEM files): smtpd offers STARTTLS with them. */
  tls?: { cert: string; key: string };
}

/**
 * A private Postfix instance (its own config and queue directory, `postfix -c DIR`), bound to
 * 127.0.0.1 and relaying only to `[127.0.0.1]:<sink>`: it never routes anywhere else. With
 * `dkim`, OpenDKIM is its milter. Returns null when Postfix or OpenDKIM is not installed, or
 * not as root (Postfix needs it).
 */
export async function startPostfix(options: PostfixOptions): Promise<Postfix | null> {
  const postfix = postfixTool('postfix');
  const postqueue = postfixTool('postqueue');
  const smtpSource = postfixTool('smtp-source');
  const opendkim = postfixTool('opendkim');
  const genkey = postfixTool('opendkim-genkey');
  const ids = (name: string) => spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (!postfix || !postqueue || !smtpSource || process.getuid?.() !== 0 || ids('postfix').status !== 0) return null;
  if (options.dkim && (!opendkim || !genkey || ids('opendkim').status !== 0)) return null;
  const uid = (name: string) => Number(ids(name).stdout.trim());

  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-postfix-'));
  chmodSync(dir, 0o755);
  const [smtpdPort, milterPort] = [await freePort(), await freePort()];
  const conf = join(dir, 'conf');
  for (const d of ['conf', 'queue', 'data']) mkdirSync(join(dir, d));
  chownSync(join(dir, 'data'), uid('postfix'), 0);
  writeFileSync(
    join(conf, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${join(dir, 'queue')}`,
      `data_directory = ${join(dir, 'data')}`,
      'mail_owner = postfix',
      'myhostname = postfix-bench.localhost',
      'mydestination =',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      `relayhost = [127.0.0.1]:${options.sink.port}`,
      'smtp_dns_support_level = disabled',
      'alias_maps =',
      'alias_database =',
      'local_recipient_maps =',
      `maillog_file = ${join(dir, 'maillog')}`,
      `maillog_file_prefixes = ${dir}`,
      ...(options.dkim ? [`smtpd_milters = inet:127.0.0.1:${milterPort}`, 'milter_default_action = tempfail'] : []),
      ...(options.defer ? ['defer_transports = smtp'] : []),
      ...(options.tls
        ? [
            `smtpd_tls_cert_file = ${options.tls.cert}`,
            `smtpd_tls_key_file = ${options.tls.key}`,
            'smtpd_tls_security_level = may',
          ]
        : []),
      'default_process_limit = 100',
      '',
    ].join('\n'),
  );
  // master.cf columns: service type private unpriv chroot wakeup maxproc command.
  const service = (name: string, type: string, priv: string, maxproc: string, command: string) =>
    `${name} ${type} ${priv} - n - ${maxproc} ${command}`;
  writeFileSync(
    join(conf, 'master.cf'),
    [
      `127.0.0.1:${smtpdPort} inet n - n - - smtpd`,
      service('pickup', 'unix', 'n', '1', 'pickup'),
      service('cleanup', 'unix', 'n', '0', 'cleanup'),
      service('qmgr', 'unix', 'n', '1', 'qmgr'),
      // The bounce daemon's services must have no process limit (Postfix refuses to start them otherwise).
      ...['bounce', 'defer', 'trace'].map((name) => service(name, 'unix', '-', '0', 'bounce')),
      // The connection cache and anvil must run as one process each (otherwise smtp disables connection reuse).
      ...['scache', 'anvil'].map((name) => service(name, 'unix', '-', '1', name)),
      ...[
        'rewrite:trivial-rewrite',
        'verify:verify',
        'proxymap:proxymap',
        'smtp:smtp',
        'relay:smtp',
        'error:error',
        'retry:error',
        'discard:discard',
        'flush:flush',
        'showq:showq',
      ].map((s) => {
        const [name, command] = s.split(':');
        return service(name!, 'unix', '-', '-', command!);
      }),
      'postlog unix-dgram n - n - 1 postlogd',
      // smtpd's TLS needs the session cache and PRNG manager.
      'tlsmgr unix - - n 1000? 1 tlsmgr',
      '',
    ].join('\n'),
  );
  let milter: ChildProcess | null = null;
  if (options.dkim) {
    spawnSync(genkey!, ['-b', '2048', '-d', 'bench.example', '-s', 'bench', '-D', dir]);
    chownSync(join(dir, 'bench.private'), uid('opendkim'), 0);
    chmodSync(join(dir, 'bench.private'), 0o600);
    writeFileSync(
      join(dir, 'opendkim.conf'),
      [
        'Syslog no',
        'Mode s',
        'Canonicalization relaxed/relaxed',
        'SignatureAlgorithm rsa-sha256',
        'Domain bench.example',
        'Selector bench',
        `KeyFile ${join(dir, 'bench.private')}`,
        'RequireSafeKeys no',
        `Socket inet:${milterPort}@127.0.0.1`,
        'UserID opendkim',
        'Background no',
        '',
      ].join('\n'),
    );
    milter = spawn(opendkim!, ['-x', join(dir, 'opendkim.conf'), '-f'], { stdio: 'ignore' });
  }
  const control = (action: string) => spawnSync(postfix, ['-c', conf, action], { encoding: 'utf8' });
  const stop = async () => {
    control('stop');
    milter?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const started = control('start');
    if (started.status !== 0) throw new Error(`postfix did not start: ${started.stderr}`);
    if (options.dkim) await waitForPort(milterPort);
    await waitForPort(smtpdPort);
  } catch (err) {
    await stop();
    throw err;
  }
  const countFiles = (d: string): number => {
    if (!existsSync(d)) return 0;
    let n = 0;
    for (const entry of readdirSync(d, { withFileTypes: true }))
      n += entry.isDirectory() ? countFiles(join(d, entry.name)) : 1;
    return n;
  };
  return {
    port: smtpdPort,
    dkim: options.dkim,
    send: (n, o = {}) =>
      new Promise<void>((resolve, reject) => {
        const args = [
          '-s',
          String(o.sessions ?? 20),
          '-m',
          String(n),
          '-l',
          String(o.size ?? 2000),
          ...(o.reuse ? ['-d'] : []),
          '-f',
          'orders@bench.example',
          '-t',
          'customer@sink.bench',
          `127.0.0.1:${smtpdPort}`,
        ];
        const child = spawn(smtpSource, args, { stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        child.stderr.on('data', (d) => (err += d));
        child.on('exit', (code) =>
          code === 0
            ? resolve()
            : reject(new Error(`smtp-source exited ${code}: ${err.trim()}\npostfix log:\n${logTail(dir)}`)),
        );
      }),
    deferredCount: () => countFiles(join(dir, 'queue', 'deferred')),
    flush: () => {
      const r = spawnSync(postqueue, ['-c', conf, '-f'], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`postqueue -f failed: ${r.stderr}`);
    },
    stop,
  };
}

const logTail = (dir: string): string => {
  const log = join(dir, 'maillog');
  return existsSync(log)
    ? readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .filter((l) => /fatal|error|warning/.test(l))
        .slice(0, 6)
        .join('\n')
    : '(no maillog)';
};

/** Resolves when the sink has counted `target` messages (bounded: 30 minutes). */
export async function waitForSink(sink: Sink, target: number, timeoutMs = 30 * 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (sink.count() < target) {
    if (Date.now() > deadline) throw new Error(`the sink got ${sink.count()} of ${target} messages in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return performance.now();
}

/**
 * The reference of the delivery bench: Postfix + OpenDKIM relaying to the same loopback
 * sink, loaded by smtp-source (20 sessions, one message per connection); end to end, from
 * the first connection to the last message at the sink.
 */
export async function postfixWithOpendkim(options: {
  messages: number;
  runs: number;
  sink: Sink;
}): Promise<{ runs: number[]; median: number } | null> {
  const pf = await startPostfix({ sink: options.sink, dkim: true });
  if (!pf) return null;
  const results: number[] = [];
  try {
    const warm = options.sink.count();
    await pf.send(500);
    await waitForSink(options.sink, warm + 500);
    for (let run = 0; run < options.runs; run++) {
      const base = options.sink.count();
      const t0 = performance.now();
      await pf.send(options.messages);
      const done = await waitForSink(options.sink, base + options.messages);
      results.push(options.messages / ((done - t0) / 1000));
    }
  } finally {
    await pf.stop();
  }
  return { runs: results, median: median(results) };
}
