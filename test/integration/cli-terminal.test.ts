import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { runCli } from '../../src/cli/program.js';
import { openRuntime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { runCliProcess, spawnCli } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { request, show } from '../helpers/http.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';
import { plain, spawnOnPty } from '../helpers/pty.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { repoPath, repoRoot } from '../../scripts/repo-root.js';

/**
 * What a person sees at the terminal: `mailsvc serve` on a pseudo-terminal (python3's pty)
 * logs readable lines, through pipes it logs JSON; a taken port names its setting; `mailsvc
 * init` asks on a terminal and takes flags otherwise; `--version`.
 */

const root = repoRoot;
const entry = repoPath('src/cli/bin.ts');
const PASSWORD = 'terminal-test-password-9f2';
const TIME_LINE = /^\d\d:\d\d:\d\d (INFO |WARN |ERROR|DEBUG) /m;

describe('mailsvc at the terminal', () => {
  let dir: string;
  let database: TestDatabase | null = null;
  let env: Record<string, string>;
  let receiver: WebhookReceiver;
  const ports: Server[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-tty-'));
    database = testPostgresUrl() ? await createTestDatabase() : null;
    receiver = await startWebhookReceiver();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      // What a terminal emulator sets; without it Node assumes a terminal without colours.
      TERM: 'xterm-256color',
      MAILSVC_DATABASE: database?.url ?? `sqlite:${join(dir, 'mailsvc.db')}`,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_TLS_PORT: '0',
      MAILSVC_DELIVERY_ENABLED: 'false',
      MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
      MAILSVC_DELIVERABILITY_CHECK_INTERVAL: '0',
      MAILSVC_WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      MAILSVC_WEBHOOKS_SCHEDULE: '[1]',
      MAILSVC_WEBHOOKS_POLL_INTERVAL: '20',
      MAILSVC_DASHBOARD_PASSWORD: PASSWORD,
    };
  });
  after(async () => {
    for (const s of ports) s.close();
    await receiver?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const httpUrlIn = (text: string) => /HTTP API on (http:\/\/\S+)/.exec(text)![1]!;

  it('serve on a terminal: coloured human lines in local time, the local-mode hint, no JSON', async () => {
    const tty = spawnOnPty(process.execPath, ['--import', 'tsx', entry, 'serve'], env, root);
    try {
      const text = await tty.waitFor(
        /local mode[^\n]*\n[\s\S]*HTTP API listening|HTTP API listening[\s\S]*local mode[^\n]*\n/,
      );
      assert.match(text, /\x1b\[/, 'coloured');
      const lines = plain(text);
      assert.match(lines, /^\d\d:\d\d:\d\d INFO {2}HTTP API listening component=http url=http:\/\/127\.0\.0\.1:\d+$/m);
      const now = new Date();
      const hour = String(now.getHours()).padStart(2, '0');
      assert.ok(
        lines.match(TIME_LINE)![0].startsWith(hour) || now.getMinutes() === 0,
        'local time, not UTC or epoch milliseconds',
      );
      assert.doesNotMatch(lines, /"level":/, 'no JSON on a terminal');
      assert.match(lines, /^mailsvc: HTTP API on http:\/\/127\.0\.0\.1:\d+/m);
      // Run from a clone: `mailsvc` is not on the PATH, so the hints say npx.
      assert.match(lines, /sign in: with dashboard\.password or `npx mailsvc dashboard login`/);
      assert.match(
        lines,
        /^mailsvc: local mode \(dkim\.host, (delivery\.hostname, )?http\.publicUrl only work on this machine\): test keys work; for a real domain run `npx mailsvc init`$/m,
      );
    } finally {
      tty.child.kill('SIGTERM');
      assert.equal(await tty.exited, 0);
    }
    assert.match(plain(tty.output()), /INFO {2}stopped$/m);
  });

  it('serve on a terminal with --log-format json writes JSON', async () => {
    const tty = spawnOnPty(process.execPath, ['--import', 'tsx', entry, 'serve', '--log-format', 'json'], env, root);
    try {
      const text = await tty.waitFor(/"msg":"HTTP API listening"/);
      const line = text.split('\n').find((l) => l.includes('HTTP API listening'))!;
      assert.equal(JSON.parse(line).component, 'http');
      assert.doesNotMatch(plain(text), TIME_LINE);
    } finally {
      tty.child.kill('SIGTERM');
      await tty.exited;
    }
  });

  it('serve through pipes logs JSON; a failed sign-in is a warning with the address and never the password; a webhook 500 is a warning', async () => {
    // The workspace's webhook endpoint answers 500 to everything.
    const setup = await openRuntime(loadConfig({ env }), { logger: createLogger('silent') });
    let key: string;
    try {
      const workspaceId = (await setup.services.workspaces.ensureDefault()).id;
      key = (await setup.services.credentials.createKey({ name: 'tty', workspaceId })).secret;
      await setup.services.webhooks.register(workspaceId, 'v1', {
        url: `${receiver.url}/hook`,
        events: ['subscriber.created'],
      });
    } finally {
      await setup.close();
    }
    receiver.reply(() => ({ status: 500, body: 'broken' }));

    const child = spawnCli(['serve'], env);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      const until = async (test: () => boolean, what: string) => {
        const deadline = Date.now() + 20_000;
        while (!test()) {
          if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no ${what}:\n${stdout}\n${stderr}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await until(() => /HTTP API on/.test(stderr), 'start');
      const url = httpUrlIn(stderr);
      const entries = () =>
        stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>);
      await until(() => entries().some((e) => e.msg === 'HTTP API listening'), 'JSON line');
      assert.ok(
        entries().every((e) => typeof e.time === 'number' && typeof e.level === 'number'),
        'every stdout line is a pino JSON object',
      );

      const dashboard = new DashboardClient(url);
      const refused = await dashboard.signIn('wrong-password-x7');
      assert.equal(refused.status, 401);
      await until(() => entries().some((e) => e.msg === 'dashboard sign-in refused'), 'sign-in warning');
      const warning = entries().find((e) => e.msg === 'dashboard sign-in refused')!;
      assert.equal(warning.level, 40);
      assert.equal(warning.method, 'password');
      assert.match(String(warning.client), /127\.0\.0\.1/);
      assert.equal((await dashboard.signIn(PASSWORD)).status, 303);
      await until(() => entries().some((e) => e.msg === 'dashboard sign-in'), 'sign-in line');

      const created = await request(url, 'POST', '/v1/subscribers', { key: key!, body: { email: 'tty@example.org' } });
      assert.ok(created.status < 300, show(created));
      await until(() => entries().some((e) => e.msg === 'webhook attempt failed'), 'webhook warning');
      const failed = entries().find((e) => e.msg === 'webhook attempt failed')!;
      assert.equal(failed.level, 40);
      assert.equal(failed.statusCode, 500);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    assert.ok(
      !stdout.includes('wrong-password-x7') && !stderr.includes('wrong-password-x7'),
      'the password typed is in no log line',
    );
    assert.ok(!stdout.includes(PASSWORD) && !stderr.includes(PASSWORD));
  });

  it('a taken port names its own setting and environment variable', async () => {
    const taken = async () => {
      const server = createServer();
      ports.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return (server.address() as { port: number }).port;
    };
    const cases: Array<[string, string, Record<string, string>]> = [
      ['http.port', 'MAILSVC_HTTP_PORT', {}],
      ['smtp.submission.port', 'MAILSVC_SMTP_SUBMISSION_PORT', {}],
      ['smtp.submission.tlsPort', 'MAILSVC_SMTP_SUBMISSION_TLS_PORT', {}],
      ['smtp.inbound.port', 'MAILSVC_SMTP_INBOUND_PORT', { MAILSVC_SMTP_INBOUND_ENABLED: 'true' }],
    ];
    for (const [setting, variable, extra] of cases) {
      const port = await taken();
      const result = await runCliProcess(['serve'], {
        ...env,
        MAILSVC_SMTP_INBOUND_PORT: '0',
        ...extra,
        [variable]: String(port),
      });
      assert.equal(result.code, 1, `${setting}: ${result.stderr}`);
      const expected = `mailsvc: address in use: 127.0.0.1:${port} (${setting}): another program, or another mailsvc, listens there; stop it or change ${setting} (${variable})`;
      assert.ok(result.stderr.split('\n').includes(expected), `${setting}:\n${result.stderr}`);
    }
  });

  it('init on a terminal asks for the host name, the addresses and the ports, and writes the file', async () => {
    const file = join(dir, 'asked.json');
    const tty = spawnOnPty(process.execPath, ['--import', 'tsx', entry, 'init', '--config', file], env, root);
    await tty.waitFor(/Public host name of this server[^:]*: $/);
    tty.type('vm');
    await tty.waitFor(/"vm" is not a public host name/);
    await tty.waitFor(/Public host name of this server[^:]*: [^\n]*\n[\s\S]*Public host name of this server[^:]*: $/);
    tty.type('Mail.Asked.Example');
    await tty.waitFor(/public IP addresses[^:]*: $/);
    tty.type('198.51.100.7, 2001:db8::7');
    await tty.waitFor(/standard mail ports[^:]*: $/);
    tty.type('n');
    assert.equal(await tty.exited, 0, tty.output());
    const text = tty.output();
    assert.match(text, /^ {2}A +mail\.asked\.example +198\.51\.100\.7$/m);
    assert.match(text, /^ {2}AAAA +mail\.asked\.example +2001:db8::7$/m);
    assert.match(text, /^ {2}PTR +198\.51\.100\.7 +mail\.asked\.example$/m);
    const written = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(written.dkim, { host: 'dkim.mail.asked.example' });
    assert.equal(written.delivery.hostname, 'mail.asked.example');
    assert.equal(written.http.publicUrl, 'https://mail.asked.example');
    assert.deepEqual(written.deliverability.sendingIps, ['198.51.100.7', '2001:db8::7']);
    assert.equal(written.smtp, undefined, 'the unprivileged ports were kept');
  });

  it('init without a terminal takes flags, writes a configuration serve loads, and refuses what it cannot use', async () => {
    const run = async (args: string[]) => {
      let stdout = '';
      let stderr = '';
      const code = await runCli(args, {
        stdout: (s) => (stdout += s),
        stderr: (s) => (stderr += s),
        env: { PATH: '' },
        stdinIsTTY: false,
      });
      return { code, stdout, stderr };
    };
    const file = join(dir, 'flags.json');
    const written = await run([
      'init',
      '--config',
      file,
      '--host',
      'mail.flags.example',
      '--ip',
      '203.0.113.9',
      '--json',
    ]);
    assert.equal(written.code, 0, written.stderr);
    const json = JSON.parse(written.stdout);
    assert.equal(json.file, file);
    assert.deepEqual(json.records.publish, [
      { type: 'A', name: 'mail.flags.example', value: '203.0.113.9' },
      { type: 'MX', name: 'mail.flags.example', value: '10 mail.flags.example' },
    ]);
    assert.deepEqual(json.records.ptr, [{ type: 'PTR', name: '203.0.113.9', value: 'mail.flags.example' }]);
    const config = loadConfig({ file, env: {} });
    assert.equal(config.dkim.host, 'dkim.mail.flags.example');
    assert.equal(config.delivery.hostname, 'mail.flags.example');
    assert.equal(config.http.publicUrl, 'https://mail.flags.example');
    assert.equal(config.deliverability.reportDomain, 'mail.flags.example');
    assert.deepEqual(
      [
        config.smtp.submission.port,
        config.smtp.submission.tlsPort,
        config.smtp.inbound.port,
        config.smtp.inbound.enabled,
      ],
      [587, 465, 25, true],
    );

    const again = await run(['init', '--config', file, '--host', 'mail.flags.example']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /exists already; run with --force/);
    assert.equal((await run(['init', '--config', file, '--host', 'other.flags.example', '--force'])).code, 0);
    assert.equal(loadConfig({ file, env: {} }).delivery.hostname, 'other.flags.example');

    const withData = join(dir, 'data-dir.json');
    assert.equal(
      (
        await run([
          'init',
          '--config',
          withData,
          '--host',
          'mail.flags.example',
          '--data-dir',
          join(dir, 'var', '..', 'lib'),
        ])
      ).code,
      0,
    );
    const placed = loadConfig({ file: withData, env: {} });
    assert.equal(
      placed.database,
      `sqlite:${join(dir, 'lib', 'mailsvc.db')}`,
      'absolute, so that every command finds the same database',
    );
    assert.equal(placed.dataDir, join(dir, 'lib'));

    const noHost = await run(['init', '--config', join(dir, 'none.json')]);
    assert.equal(noHost.code, 2);
    assert.match(noHost.stderr, /init needs --host NAME/);
    const local = await run(['init', '--config', join(dir, 'none.json'), '--host', 'localhost']);
    assert.equal(local.code, 1);
    assert.match(local.stderr, /"localhost" is not a public host name/);
    const badIp = await run([
      'init',
      '--config',
      join(dir, 'none.json'),
      '--host',
      'mail.x.example',
      '--ip',
      '999.1.1.1',
    ]);
    assert.equal(badIp.code, 1);
    assert.match(badIp.stderr, /"999\.1\.1\.1" is not an IP address/);
    assert.equal(existsSync(join(dir, 'none.json')), false);
  });

  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-v']) {
      let stdout = '';
      const code = await runCli([flag], { stdout: (s) => (stdout += s), stderr: () => {}, env: {} });
      assert.equal(code, 0);
      assert.equal(stdout, `${version}\n`);
    }
    writeFileSync(join(dir, 'unused'), '');
  });
});
