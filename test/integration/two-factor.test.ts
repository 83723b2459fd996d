import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateSync } from 'otplib';
import { LOCKOUT_WINDOW_MS, MAX_LOGIN_FAILURES } from '../../src/services/dashboard-auth.js';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Two-factor sign-in and sessions over HTTP (issue 32), on the server's own clock: a code is
 * taken one step either side of now and not two, never twice; recovery codes work once; wrong
 * codes count towards the sign-in lockout; revoking a session or changing the password ends
 * sessions at once; a workspace that requires a second factor sends members to enrol first.
 */

const STEP_MS = 30_000;
const OWNER = { email: 'owner@team.test', password: 'owner password, long enough' };
const DEV = { email: 'dev@team.test', password: 'developer password here' };

const code = (secret: string, at: number): string => generateSync({ secret, epoch: Math.floor(at / 1000) });

describe('two-factor sign-in and sessions (HTTP)', () => {
  let server: TestServer;
  const clock = manualClock();
  // Ten seconds into a step: one step either side is unambiguous.
  const T0 = Math.floor(Date.now() / STEP_MS) * STEP_MS + 10_000;
  let secret = '';
  let recovery: string[] = [];
  let env: Record<string, string>;

  /** Password first; returns the client holding the second-factor ticket (or signed in), and the answer. */
  const password = async (who: { email: string; password: string }, headers: Record<string, string> = {}) => {
    const client = new DashboardClient(server.httpUrl);
    const form = await client.get('/dashboard/login', headers);
    const res = await client.post(
      '/dashboard/login',
      { _csrf: form.csrf ?? '', email: who.email, password: who.password },
      headers,
    );
    return { client, res };
  };
  const secondStep = async (client: DashboardClient, value: string, headers: Record<string, string> = {}) => {
    const form = await client.get('/dashboard/login/two-factor', headers);
    assert.equal(form.status, 200, 'the code form is shown while the ticket is good');
    return client.post('/dashboard/login/two-factor', { _csrf: form.csrf ?? '', code: value }, headers);
  };
  const signIn = async (who: { email: string; password: string }, value?: string) => {
    const { client, res } = await password(who);
    if (value === undefined) return { client, res };
    assert.equal(res.status, 303);
    return { client, res: await secondStep(client, value) };
  };
  const postForm = async (
    client: DashboardClient,
    page: string,
    action: string,
    fields: Record<string, string> = {},
  ) => {
    const got = await client.get(page);
    return client.post(action, { _csrf: got.csrf ?? '', ...fields });
  };
  const audit = async (action: string) =>
    (
      await server.runtime.services.audit.list(
        { workspaceId: server.workspaceId, instance: true },
        { action, limit: 100 },
      )
    ).data;
  const signedIn = async (client: DashboardClient) => (await client.get('/dashboard/keys')).status === 200;

  before(async () => {
    clock.set(T0);
    server = await startTestServer({}, { clock });
    env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    await server.runtime.services.users.create({ ...OWNER, workspaceId: server.workspaceId, role: 'owner' });
    await server.runtime.services.users.create({ ...DEV, workspaceId: server.workspaceId, role: 'developer' });
  });
  after(() => server.close());

  it('enrols from the Account page: a QR code and the key as text, on only once a code confirms it; ten recovery codes shown once', async () => {
    const { client } = await signIn(OWNER);
    const account = await client.get('/dashboard/account');
    assert.equal(account.status, 200);
    assert.match(account.text, /Two-factor sign-in is <strong>off<\/strong>/);
    const enrol = await client.get('/dashboard/account/two-factor');
    assert.equal(enrol.status, 200);
    assert.match(enrol.text, /<svg [^>]*role="img"[^>]*>[\s\S]*<path/, 'the QR code, inline SVG');
    secret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec(enrol.text)?.[1] ?? assert.fail('no key shown');
    assert.equal(
      (await client.get('/dashboard/account/two-factor')).text.includes(secret),
      true,
      'a reload shows the same key until confirmed',
    );

    const row = await server.runtime.store.db.selectFrom('user_two_factor').selectAll().executeTakeFirstOrThrow();
    assert.match(row.secret_sealed, /^v1\./, 'sealed at rest');
    assert.equal(row.secret_sealed.includes(secret), false);
    assert.equal(row.confirmed_at, null, 'not on before a code confirms it');
    assert.equal(
      (await password(OWNER)).res.headers.get('location'),
      '/dashboard',
      'still one step: the enrolment is not confirmed',
    );

    const wrong = await client.post('/dashboard/account/two-factor', {
      _csrf: enrol.csrf ?? '',
      code: String((Number(code(secret, T0)) + 1) % 1_000_000).padStart(6, '0'),
    });
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /That code is not right/);
    const right = await client.post('/dashboard/account/two-factor', {
      _csrf: enrol.csrf ?? '',
      code: code(secret, T0),
    });
    assert.equal(right.status, 303);
    const shown = await client.get('/dashboard/account');
    recovery = [...shown.text.matchAll(/<li><code>([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4})<\/code><\/li>/g)].map(
      (m) => m[1]!,
    );
    assert.equal(recovery.length, 10);
    assert.match(shown.text, /Two-factor sign-in is <strong>on<\/strong>. 10 of 10 recovery codes left/);
    assert.doesNotMatch((await client.get('/dashboard/account')).text, /id="recovery-codes"/, 'shown once');
    const hashes = await server.runtime.store.db.selectFrom('user_recovery_codes').select('code_hash').execute();
    assert.equal(hashes.length, 10);
    for (const c of recovery)
      assert.equal(
        hashes.some((h) => h.code_hash.includes(c) || h.code_hash.includes(c.replaceAll('-', ''))),
        false,
        'stored hashed',
      );
  });

  it('asks for the code after the password; the ticket alone opens nothing', async () => {
    clock.set(T0 + 2 * STEP_MS);
    const { client, res } = await password(OWNER);
    assert.equal(res.status, 303);
    assert.match(res.headers.get('location') ?? '', /^\/dashboard\/login\/two-factor/);
    assert.equal(client.cookies.has('mailsvc_session'), false);
    const keys = await client.get('/dashboard/keys');
    assert.equal(keys.status, 302, 'no session yet');
    assert.match(keys.headers.get('location') ?? '', /^\/dashboard\/login/);
    // A ticket made up or tampered with is refused like an expired one.
    const forged = new DashboardClient(server.httpUrl);
    forged.cookies.set('mailsvc_2fa', client.cookies.get('mailsvc_2fa')!.slice(0, -4) + 'AAAA');
    assert.equal((await forged.get('/dashboard/login/two-factor')).status, 302);
    assert.equal((await secondStep(client, code(secret, T0 + 2 * STEP_MS))).status, 303);
    assert.equal(await signedIn(client), true);
    assert.equal(client.cookies.has('mailsvc_2fa'), false, 'the ticket is spent');

    // Joining another workspace by invitation with the account's password still owes the code.
    clock.set(T0 + 3 * STEP_MS);
    const other = await server.runtime.services.workspaces.create('second workspace');
    const invited = await server.runtime.services.users.invite({
      email: OWNER.email,
      workspaceId: other.id,
      role: 'viewer',
    });
    const joiner = new DashboardClient(server.httpUrl);
    const path = new URL(invited.url).pathname;
    const form = await joiner.get(path);
    const joined = await joiner.post(path, {
      _csrf: form.csrf ?? '',
      password: OWNER.password,
      confirm: OWNER.password,
    });
    assert.equal(joined.status, 303);
    assert.equal(joined.headers.get('location'), '/dashboard/login/two-factor');
    assert.equal(joiner.cookies.has('mailsvc_session'), false, 'no session before the code');
    assert.equal((await secondStep(joiner, code(secret, clock.now()))).status, 303);
    assert.equal(await signedIn(joiner), true);
  });

  it('takes a code one step either side of now, not two; never the same code twice', async () => {
    const now = T0 + 10 * STEP_MS;
    clock.set(now);
    let { client } = await password(OWNER);
    assert.equal((await secondStep(client, code(secret, now - 2 * STEP_MS))).status, 401, 'two steps old');
    assert.equal((await secondStep(client, code(secret, now + 2 * STEP_MS))).status, 401, 'two steps ahead');
    assert.equal((await secondStep(client, code(secret, now - STEP_MS))).status, 303, 'one step old');

    ({ client } = await password(OWNER));
    const replay = await secondStep(client, code(secret, now - STEP_MS));
    assert.equal(replay.status, 401, 'the same code again');
    assert.match(replay.text, /That code is not right/);
    assert.equal(
      (await secondStep(client, code(secret, now))).status,
      303,
      'the current step, later than the last used',
    );
    ({ client } = await password(OWNER));
    assert.equal((await secondStep(client, code(secret, now))).status, 401, 'replayed within its window');
    assert.equal((await secondStep(client, code(secret, now + STEP_MS))).status, 303, 'one step ahead');
    ({ client } = await password(OWNER));
    assert.equal(
      (await secondStep(client, code(secret, now - STEP_MS))).status,
      401,
      'an earlier step than one used is never taken',
    );
    assert.equal((await secondStep(client, 'not a code')).status, 401);
    assert.equal((await secondStep(client, '1'.repeat(65))).status, 401, 'too long: refused without a 500');
  });

  it(`counts wrong codes towards the sign-in lockout (${MAX_LOGIN_FAILURES} per client and window)`, async () => {
    clock.advance(LOCKOUT_WINDOW_MS);
    const now = clock.now();
    const headers = { 'user-agent': 'lockout test' };
    const { client } = await password(OWNER, headers);
    for (let i = 0; i < MAX_LOGIN_FAILURES; i++)
      assert.equal((await secondStep(client, `00000${i}`, headers)).status, 401, `wrong code ${i + 1}`);
    const locked = await password(OWNER, headers);
    assert.equal(locked.res.status, 429, 'the right password is refused now');
    assert.ok(Number(locked.res.headers.get('retry-after')) > 0);
    clock.advance(LOCKOUT_WINDOW_MS);
    const later = await password(OWNER);
    assert.equal((await secondStep(later.client, code(secret, clock.now()))).status, 303);
    assert.ok(clock.now() > now);
  });

  it('a recovery code signs in once, typed in any case and with or without dashes', async () => {
    clock.advance(LOCKOUT_WINDOW_MS);
    const first = recovery[0]!;
    const { client, res } = await signIn(OWNER, ` ${first.toUpperCase().replaceAll('-', '')} `);
    assert.equal(res.status, 303);
    assert.equal(await signedIn(client), true);
    assert.equal((await signIn(OWNER, first)).res.status, 401, 'used up');
    assert.match((await client.get('/dashboard/account')).text, /9 of 10 recovery codes left/);
    const used = await audit('user.recovery_code_used');
    assert.equal(used.length, 1);
    assert.equal(used[0]!.actor.type, 'user');
    assert.deepEqual(used[0]!.detail, { recovery_codes_left: 9 });
  });

  it('revoking a session signs that browser out at once; a session of another user or the current one cannot be revoked here', async () => {
    clock.advance(STEP_MS);
    const a = (await signIn(DEV)).client;
    const b = (await password(DEV, { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0' })).client;
    assert.equal(await signedIn(a), true);
    assert.equal(await signedIn(b), true);
    const account = await a.get('/dashboard/account');
    const ids = [...account.text.matchAll(/data-session="([0-9a-f]{16})"/g)].map((m) => m[1]!);
    assert.equal(ids.length, 2);
    assert.match(account.text, /Firefox on Linux/);
    assert.match(account.text, /127\.0\.0\.1/);
    const current =
      account.text
        .split('<tr data-session="')
        .find((row) => row.includes('this browser'))
        ?.slice(0, 16) ?? assert.fail('current session not marked');
    const other = ids.find((id) => id !== current)!;

    const owner = (await signIn(OWNER, code(secret, clock.now()))).client;
    assert.equal(
      (await postForm(owner, '/dashboard/account', `/dashboard/account/sessions/${other}/revoke`)).status,
      404,
      "another user's session",
    );
    assert.equal(await signedIn(b), true);
    assert.equal(
      (await postForm(a, '/dashboard/account', `/dashboard/account/sessions/${current}/revoke`)).status,
      400,
      'the current one: sign out instead',
    );
    assert.equal((await postForm(a, '/dashboard/account', `/dashboard/account/sessions/${other}/revoke`)).status, 303);
    assert.equal(await signedIn(b), false, 'revoked at once');
    assert.equal(await signedIn(a), true);
    assert.equal(
      (await postForm(a, '/dashboard/account', `/dashboard/account/sessions/${other}/revoke`)).status,
      404,
      'gone already',
    );
    const revoked = await audit('session.revoked');
    assert.deepEqual(
      revoked.map((e) => [e.actor.type, e.object_id]),
      [['user', other]],
    );
  });

  it('"sign out everywhere else" ends every other session of the user', async () => {
    const a = (await signIn(DEV)).client;
    const b = (await signIn(DEV)).client;
    const c = (await signIn(DEV)).client;
    assert.equal((await postForm(a, '/dashboard/account', '/dashboard/account/sessions/revoke-others')).status, 303);
    assert.deepEqual([await signedIn(a), await signedIn(b), await signedIn(c)], [true, false, false]);
  });

  it('a password change needs the current password and ends the other sessions', async () => {
    const a = (await signIn(DEV)).client;
    await postForm(a, '/dashboard/account', '/dashboard/account/sessions/revoke-others');
    const b = (await signIn(DEV)).client;
    const change = (fields: Record<string, string>) =>
      postForm(a, '/dashboard/account', '/dashboard/account/password', fields);
    const next = 'a brand new developer password';
    const wrong = await change({ current_password: 'not the current one at all', password: next, confirm: next });
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /current_password: is not your current password/);
    assert.equal(
      (await change({ current_password: DEV.password, password: next, confirm: `${next}!` })).status,
      400,
      'the two differ',
    );
    const short = await change({ current_password: DEV.password, password: 'elevenchars', confirm: 'elevenchars' });
    assert.equal(short.status, 400, '11 characters');
    assert.match(short.text, /at least 12 characters/);
    assert.equal(await signedIn(b), true, 'nothing changed yet');
    assert.equal(
      (await change({ current_password: DEV.password, password: 'twelve chars', confirm: 'twelve chars' })).status,
      303,
      '12 characters',
    );
    assert.equal(await signedIn(b), false, 'the other session ended');
    assert.equal(await signedIn(a), true, 'this one goes on');
    assert.equal((await signIn(DEV)).res.status, 401, 'the old password no longer works');
    assert.equal((await signIn({ ...DEV, password: 'twelve chars' })).res.status, 303);
    const [entry] = await audit('user.password_changed');
    assert.equal(entry?.actor.type, 'user');
    assert.deepEqual(entry?.detail, { sessions_ended: 1 });
    DEV.password = 'twelve chars';
  });

  it('an owner requires a second factor: members without one are sent to enrol before anything else', async () => {
    clock.advance(LOCKOUT_WINDOW_MS);
    const dev = (await signIn(DEV)).client;
    const refused = await postForm(dev, '/dashboard/account', '/dashboard/account/two-factor/required');
    assert.equal(refused.status, 403, 'only an owner');
    clock.advance(STEP_MS);
    const owner = (await signIn(OWNER, code(secret, clock.now()))).client;
    assert.equal((await postForm(owner, '/dashboard/account', '/dashboard/account/two-factor/required')).status, 303);
    assert.match((await owner.get('/dashboard/account')).text, /Required: members without it/);

    const keys = await dev.get('/dashboard/keys');
    assert.equal(keys.status, 302);
    assert.equal(keys.headers.get('location'), '/dashboard/account/two-factor');
    assert.equal((await dev.get('/dashboard/overview')).headers.get('location'), '/dashboard/account/two-factor');
    const enrol = await dev.get('/dashboard/account/two-factor');
    assert.equal(enrol.status, 200);
    assert.match(enrol.text, /requires two-factor sign-in: set it up to go on/);
    assert.equal(
      (await dev.post('/dashboard/keys', { _csrf: enrol.csrf ?? '', name: 'before enrolling' })).status,
      403,
    );
    const devSecret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec(enrol.text)![1]!;
    assert.equal(
      (await dev.post('/dashboard/account/two-factor', { _csrf: enrol.csrf ?? '', code: code(devSecret, clock.now()) }))
        .status,
      303,
    );
    assert.equal((await dev.get('/dashboard/keys')).status, 200, 'enrolled: the dashboard opens');

    const disable = await postForm(dev, '/dashboard/account', '/dashboard/account/two-factor/disable', {
      code: code(devSecret, clock.now() + STEP_MS),
    });
    assert.equal(disable.status, 403, 'cannot be turned off while required');
    const actions = (await audit('workspace.'))
      .filter((e) => e.action.startsWith('workspace.two_factor'))
      .map((e) => [e.action, e.actor.type]);
    assert.deepEqual(actions, [['workspace.two_factor_required', 'user']]);
    assert.equal(
      (await postForm(owner, '/dashboard/account', '/dashboard/account/two-factor/required?off=1')).status,
      303,
    );
    assert.equal(
      (
        await postForm(dev, '/dashboard/account', '/dashboard/account/two-factor/disable', {
          code: code(devSecret, clock.now() + STEP_MS),
        })
      ).status,
      303,
    );
    assert.match((await dev.get('/dashboard/account')).text, /Two-factor sign-in is <strong>off<\/strong>/);
  });

  it('`mailsvc users reset-2fa` turns it off for a lost device and ends the sessions', async () => {
    const owner = (await signIn(OWNER, recovery[1])).client;
    assert.equal(await signedIn(owner), true);
    const reset = await runCliProcess(['users', 'reset-2fa', 'Owner@Team.test'], env);
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, /Two-factor sign-in of owner@team\.test is off/);
    assert.equal(await signedIn(owner), false);
    assert.equal((await signIn(OWNER)).res.headers.get('location'), '/dashboard', 'the password alone signs in');
    assert.equal((await runCliProcess(['users', 'reset-2fa', 'nobody@team.test'], env)).code, 1);
  });

  it('records every change with the user as actor and never a secret, a code or a password', async () => {
    const entries = (
      await server.runtime.services.audit.list({ workspaceId: server.workspaceId, instance: true }, { limit: 100 })
    ).data;
    const actions = entries.map((e) => e.action);
    for (const a of [
      'user.two_factor_enabled',
      'user.two_factor_disabled',
      'user.two_factor_reset',
      'workspace.two_factor_required',
      'workspace.two_factor_optional',
      'session.revoked',
      'session.others_ended',
      'user.password_changed',
      'user.recovery_code_used',
    ]) {
      assert.ok(actions.includes(a), `${a} recorded`);
    }
    const text = JSON.stringify(entries);
    for (const s of [secret, ...recovery, OWNER.password, DEV.password, 'a brand new developer password'])
      assert.equal(text.includes(s), false, 'no secret in the audit log');
    const ids = new Map((await server.runtime.services.users.list(server.workspaceId)).map((u) => [u.id, u.email]));
    const enabled = entries.filter((e) => e.action === 'user.two_factor_enabled');
    assert.deepEqual(
      enabled.map((e) => [e.actor.type, ids.get(e.actor.id!), ids.get(e.object_id!)]),
      [
        ['user', DEV.email, DEV.email],
        ['user', OWNER.email, OWNER.email],
      ],
    );
  });
});
