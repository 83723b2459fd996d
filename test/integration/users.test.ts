import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Team accounts (issue 32): the first owner made by the CLI retires the shared password;
 * invitations printed by the CLI are accepted in the dashboard once; each role may change only
 * what it allows (a viewer nothing, a developer no keys), checked on every dashboard POST.
 */

const SHARED = 'the shared dashboard password';
const OWNER_PASSWORD = 'owner password, long enough';

describe('dashboard users and roles', () => {
  let server: TestServer;
  let env: Record<string, string>;
  const keyCount = async () =>
    (await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false })).length;
  const signIn = async (email: string, password: string) => {
    const client = new DashboardClient(server.httpUrl);
    const form = await client.get('/dashboard/login');
    return { client, res: await client.post('/dashboard/login', { _csrf: form.csrf ?? '', email, password }) };
  };
  const accept = async (url: string, password: string, confirm = password) => {
    const client = new DashboardClient(server.httpUrl);
    const path = new URL(url).pathname;
    const page = await client.get(path);
    return { client, page, res: await client.post(path, { _csrf: page.csrf ?? '', password, confirm }) };
  };
  const invite = async (email: string, role: string) => {
    const res = await runCliProcess(['users', 'invite', email, '--role', role], env);
    assert.equal(res.code, 0, res.stderr);
    return /^(http\S+\/dashboard\/invite\/\S+)$/m.exec(res.stdout)?.[1] ?? assert.fail(res.stdout);
  };
  const createKey = async (client: DashboardClient, name: string) => {
    const page = await client.get('/dashboard/keys');
    assert.equal(page.status, 200);
    return client.post('/dashboard/keys', { _csrf: page.csrf ?? '', name });
  };

  before(async () => {
    server = await startTestServer({ dashboard: { password: SHARED } });
    env = {
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: server.dir,
      MAILSVC_HTTP_PUBLIC_URL: server.httpUrl,
      MAILSVC_LOG_LEVEL: 'warn',
    };
  });
  after(() => server.close());

  it('the shared password signs in until the first owner exists; then only users do', async () => {
    assert.equal((await new DashboardClient(server.httpUrl).signIn(SHARED)).status, 303, 'before any user');
    const short = await runCliProcess(['users', 'create', '--owner', '--email', 'owner@team.test'], {
      ...env,
      MAILSVC_USER_PASSWORD: 'elevenchars',
    });
    assert.equal(short.code, 1);
    assert.match(short.stderr, /password: at least 12 characters/);
    const created = await runCliProcess(['users', 'create', '--owner', '--email', 'Owner@Team.test'], {
      ...env,
      MAILSVC_USER_PASSWORD: OWNER_PASSWORD,
    });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /Created owner@team\.test \(owner\)/);
    const again = await runCliProcess(['users', 'create', '--email', 'owner@team.test'], {
      ...env,
      MAILSVC_USER_PASSWORD: OWNER_PASSWORD,
    });
    assert.notEqual(again.code, 0, 'one account per address');

    assert.equal(
      (await new DashboardClient(server.httpUrl).signIn(SHARED)).status,
      401,
      'the shared password is retired',
    );
    const login = await new DashboardClient(server.httpUrl).get('/dashboard/login');
    assert.match(login.text, /name="email"/, 'the form asks for the address');
    assert.equal((await signIn('owner@team.test', 'not the password at all')).res.status, 401);
    assert.equal((await signIn('nobody@team.test', OWNER_PASSWORD)).res.status, 401);
    const owner = await signIn('owner@team.test', OWNER_PASSWORD);
    assert.equal(owner.res.status, 303);
    const before = await keyCount();
    assert.equal((await createKey(owner.client, 'made by the owner')).status, 303);
    assert.equal(await keyCount(), before + 1);
  });

  it('an invitation is accepted once, with a password chosen twice alike', async () => {
    const url = await invite('dev@team.test', 'developer');
    const mismatch = await accept(url, 'developer password 1', 'developer password 2');
    assert.equal(mismatch.page.status, 200);
    assert.match(mismatch.page.text, /dev@team\.test[\s\S]*developer/);
    assert.equal(mismatch.res.status, 400);
    assert.match(mismatch.res.text, /differ/);
    const joined = await accept(url, 'developer password 1');
    assert.equal(joined.res.status, 303);
    assert.equal((await joined.client.get('/dashboard/keys')).status, 200, 'signed in by accepting');
    assert.equal((await new DashboardClient(server.httpUrl).get(new URL(url).pathname)).status, 404, 'used up');
    assert.equal((await signIn('dev@team.test', 'developer password 1')).res.status, 303);
  });

  it('a viewer sees pages and changes nothing; a developer manages no keys', async () => {
    const viewer = (await accept(await invite('viewer@team.test', 'viewer'), 'viewer password here')).client;
    const before = await keyCount();
    assert.equal((await viewer.get('/dashboard/keys')).status, 200);
    const refused = await createKey(viewer, 'by a viewer');
    assert.equal(refused.status, 403);
    assert.match(refused.text, /Your role \(viewer\) may not change this/);
    const developer = (await signIn('dev@team.test', 'developer password 1')).client;
    assert.equal((await createKey(developer, 'by a developer')).status, 403);
    assert.equal(await keyCount(), before, 'nothing was created');
    // Signing out is no change to the workspace: every role may.
    const page = await viewer.get('/dashboard/keys');
    assert.equal((await viewer.post('/dashboard/logout', { _csrf: page.csrf ?? '' })).status, 303);
  });

  it('lists users with their roles, and the audit log has who joined and who invited', async () => {
    const listed = await runCliProcess(['users', 'list', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      (JSON.parse(listed.stdout).users as Array<{ email: string; role: string }>).map((u) => [u.email, u.role]),
      [
        ['owner@team.test', 'owner'],
        ['dev@team.test', 'developer'],
        ['viewer@team.test', 'viewer'],
      ],
    );
    const audit = await runCliProcess(['audit', '--action', 'user.', '--json', '--limit', '100'], env);
    const actions = (JSON.parse(audit.stdout).data as Array<{ action: string; actor: { type: string } }>).map(
      (e) => `${e.action} ${e.actor.type}`,
    );
    assert.deepEqual(
      actions.sort(),
      [
        'user.created cli',
        'user.invited cli',
        'user.invited cli',
        'user.joined dashboard',
        'user.joined dashboard',
      ].sort(),
    );
    assert.doesNotMatch(audit.stdout, /dashboard\/invite\//, 'no invitation link in the audit log');
  });
});
