import { spawn, spawnSync } from 'node:child_process';
import { chownSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './lib.js';
import { freePort, postfixTool, waitForPort, type Sink } from './smtp-sink.js';

/**
 * The reference: Postfix relaying to the same loopback sink, with OpenDKIM as its milter
 * signing every message (RSA-2048, relaxed/relaxed), loaded by Postfix's smtp-source. A
 * private Postfix instance (its own config and queue directory, `postfix -c DIR`), bound to
 * 127.0.0.1 and relaying only to `[127.0.0.1]:<sink>`: it never routes anywhere else.
 * Returns null when Postfix or OpenDKIM is not installed, or not as root (Postfix needs it).
 */
export async function postfixWithOpendkim(options: { messages: number; runs: number; sink: Sink }): Promise<{ runs: number[]; median: number } | null> {
  const postfix = postfixTool('postfix');
  const smtpSource = postfixTool('smtp-source');
  const opendkim = postfixTool('opendkim');
  const genkey = postfixTool('opendkim-genkey');
  const ids = (name: string) => spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (!postfix || !smtpSource || !opendkim || !genkey || process.getuid?.() !== 0 || ids('postfix').status !== 0 || ids('opendkim').status !== 0) return null;
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
      `smtpd_milters = inet:127.0.0.1:${milterPort}`,
      'milter_default_action = tempfail',
      'default_process_limit = 100',
      '',
    ].join('\n'),
  );
  // master.cf columns: service type private unpriv chroot wakeup maxproc command.
  const service = (name: string, type: string, priv: string, maxproc: string, command: string) => `${name} ${type} ${priv} - n - ${maxproc} ${command}`;
  writeFileSync(
    join(conf, 'master.cf'),
    [
      `127.0.0.1:${smtpdPort} inet n - n - - smtpd`,
      service('pickup', 'unix', 'n', '1', 'pickup'),
      service('cleanup', 'unix', 'n', '0', 'cleanup'),
      service('qmgr', 'unix', 'n', '1', 'qmgr'),
      ...['rewrite:trivial-rewrite', 'bounce:bounce', 'defer:bounce', 'trace:bounce', 'verify:verify', 'proxymap:proxymap', 'smtp:smtp', 'relay:smtp', 'error:error', 'retry:error', 'discard:discard', 'anvil:anvil', 'scache:scache', 'flush:flush', 'showq:showq'].map((s) => {
        const [name, command] = s.split(':');
        return service(name!, 'unix', '-', '-', command!);
      }),
      'postlog unix-dgram n - n - 1 postlogd',
      '',
    ].join('\n'),
  );
  spawnSync(genkey, ['-b', '2048', '-d', 'bench.example', '-s', 'bench', '-D', dir]);
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

  const milter = spawn(opendkim, ['-x', join(dir, 'opendkim.conf'), '-f'], { stdio: 'ignore' });
  const control = (action: string) => spawnSync(postfix, ['-c', conf, action], { encoding: 'utf8' });
  const started = control('start');
  const results: number[] = [];
  try {
    if (started.status !== 0) throw new Error(`postfix did not start: ${started.stderr}`);
    await waitForPort(milterPort);
    await waitForPort(smtpdPort);
    const send = (n: number) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(smtpSource, ['-s', '20', '-m', String(n), '-l', '2000', '-f', 'orders@bench.example', '-t', 'customer@sink.bench', `127.0.0.1:${smtpdPort}`], { stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        child.stderr.on('data', (d) => (err += d));
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`smtp-source exited ${code}: ${err.trim()}`))));
      });
    const waitFor = async (target: number) => {
      const deadline = Date.now() + 30 * 60_000;
      while (options.sink.count() < target) {
        if (Date.now() > deadline) throw new Error(`postfix delivered ${options.sink.count()} of ${target}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return performance.now();
    };
    const warm = options.sink.count();
    await send(500);
    await waitFor(warm + 500);
    for (let run = 0; run < options.runs; run++) {
      const base = options.sink.count();
      const t0 = performance.now();
      await send(options.messages);
      const done = await waitFor(base + options.messages);
      results.push(options.messages / ((done - t0) / 1000));
    }
  } catch (err) {
    const log = join(dir, 'maillog');
    const tail = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter((l) => /fatal|error|warning/.test(l)).slice(0, 6).join('\n') : '(no maillog)';
    throw new Error(`${(err as Error).message}\npostfix log:\n${tail}`);
  } finally {
    control('stop');
    milter.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
  return { runs: results, median: median(results) };
}
