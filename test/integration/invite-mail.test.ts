import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { verifyDkim } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import type { TestDns } from '../helpers/dns-server.js';
import type { TestMx } from '../helpers/mx-server.js';
import type { TestServer } from '../helpers/server.js';

/**
 * Invitations mailed through the server itself (issue 32): `mailsvc users invite` queues the
 * link as an email from the workspace's verified domain (or dashboard.mailFrom), a real MX on
 * loopback receives it, and its link makes a user; where the workspace cannot send, the CLI
 * says why and prints the link instead.
 */

const PUBLIC = 'http://mail.team.example';

describe('invitations by email', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let env: Record<string, string>;

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { pollInterval: 50, signingThreads: 0 },
      config: { http: { publicUrl: PUBLIC } },
      senders: ['team.example'],
    });
    ({ server, dns, mx } = rig);
    env = {
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: server.dir,
      MAILSVC_HTTP_PUBLIC_URL: PUBLIC,
      MAILSVC_LOG_LEVEL: 'warn',
    };
    await server.runtime.services.users.create({
      email: 'owner@team.example',
      password: 'owner password, long enough',
      workspaceId: server.workspaceId,
      role: 'owner',
    });
  });
  after(async () => {
    await rig?.close();
  });

  const invite = async (email: string, role: string, extra: Record<string, string> = {}, args: string[] = []) => {
    const res = await runCliProcess(['users', 'invite', email, '--role', role, ...args], { ...env, ...extra });
    assert.equal(res.code, 0, res.stderr);
    return res.stdout;
  };
  const received = async (to: string) => {
    await mx.waitFor(mx.messages.length + 1, 20_000).catch(() => undefined);
    const message = mx.messages.find((m) => m.to.includes(to)) ?? assert.fail(`no mail to ${to}`);
    return { message, parsed: await simpleParser(message.raw) };
  };

  it("mails the link from the workspace's verified domain; the link in the mail makes the user", async () => {
    const out = await invite('new.dev@dest.test', 'developer');
    assert.match(out, /^Mailed the invitation to new\.dev@dest\.test \(developer, email [0-9a-f-]{36}\)/);
    assert.doesNotMatch(out, /dashboard\/invite\//, "the link is not printed once mailed: it is the invitee's");
    const { message, parsed } = await received('new.dev@dest.test');
    // Whoever may read the workspace's emails (a developer's key) must not read the link back.
    const emailId = /email ([0-9a-f-]{36})/.exec(out)?.[1] ?? assert.fail(out);
    const stored = await server.runtime.services.emails.get(server.workspaceId, emailId);
    assert.deepEqual([stored.subject, stored.html, stored.text], ['You are invited to default on mailsvc', null, null]);
    await assert.rejects(server.runtime.services.emails.raw(server.workspaceId, emailId), /Content of email/);
    assert.equal(parsed.from?.value[0]?.address, 'noreply@team.example');
    assert.equal(parsed.subject, 'You are invited to default on mailsvc');
    const dkim = await verifyDkim(message.raw, dns);
    assert.equal(dkim[0]?.status.result, 'pass', 'signed like any mail of the domain');
    const link =
      /https?:\/\/\S+\/dashboard\/invite\/[A-Za-z0-9_-]{43}/.exec(parsed.text ?? '')?.[0] ?? assert.fail(parsed.text);
    assert.ok(link.startsWith(`${PUBLIC}/dashboard/invite/`), 'the link itself, not a tracking redirect');
    assert.ok(parsed.html && parsed.html.includes(link), 'the HTML part links to it directly too');

    const path = new URL(link).pathname;
    const client = new DashboardClient(server.httpUrl);
    const page = await client.get(path);
    assert.equal(page.status, 200);
    assert.match(page.text, /new\.dev@dest\.test/);
    const joined = await client.post(path, {
      _csrf: page.csrf ?? '',
      password: 'the new developer password',
      confirm: 'the new developer password',
    });
    assert.equal(joined.status, 303);
    assert.equal((await client.get('/dashboard/keys')).status, 200, 'signed in as the new user');
    assert.equal((await new DashboardClient(server.httpUrl).get(path)).status, 404, 'the link worked once');
    const [entry] = (
      await server.runtime.services.audit.list(
        { workspaceId: server.workspaceId, instance: false },
        { action: 'user.invited', limit: 10 },
      )
    ).data;
    assert.equal(entry?.detail?.mailed, true);
    assert.doesNotMatch(JSON.stringify(entry), /dashboard\/invite/);
  });

  it('sends from dashboard.mailFrom when set', async () => {
    await invite('viewer@dest.test', 'viewer', { MAILSVC_DASHBOARD_MAIL_FROM: 'The Team <team@team.example>' });
    const { parsed } = await received('viewer@dest.test');
    assert.deepEqual(parsed.from?.value[0], { name: 'The Team', address: 'team@team.example' });
  });

  it('says why it could not mail and prints the link when the workspace has no verified domain', async () => {
    const other = await server.runtime.services.workspaces.create('no domain yet');
    const before = mx.messages.length;
    const out = await invite('someone@dest.test', 'admin', {}, ['--workspace', other.id]);
    assert.match(
      out,
      /Not mailed \(the workspace no domain yet has no verified domain to send from, and dashboard\.mailFrom is not set\)/,
    );
    const link = /^(http\S+\/dashboard\/invite\/\S+)$/m.exec(out)?.[1] ?? assert.fail(out);
    const json = JSON.parse(
      (
        await runCliProcess(
          ['users', 'invite', 'someone.else@dest.test', '--role', 'viewer', '--workspace', other.id, '--json'],
          env,
        )
      ).stdout,
    ) as { mailed: boolean; url: string; mail_error: string };
    assert.equal(json.mailed, false);
    assert.match(json.url, /\/dashboard\/invite\//);
    // A dashboard.mailFrom on a domain the workspace does not own is refused the same way.
    const foreign = await invite('third@dest.test', 'viewer', { MAILSVC_DASHBOARD_MAIL_FROM: 'team@team.example' }, [
      '--workspace',
      other.id,
    ]);
    assert.match(
      foreign,
      /Not mailed \(dashboard\.mailFrom: team\.example is not a verified domain of this workspace\)/,
    );
    const client = new DashboardClient(server.httpUrl);
    const path = new URL(link).pathname;
    const page = await client.get(path);
    assert.equal(
      (await client.post(path, { _csrf: page.csrf ?? '', password: 'an admin password', confirm: 'an admin password' }))
        .status,
      303,
      'the printed link works',
    );
    assert.equal(mx.messages.length, before, 'nothing was mailed');
  });
});
