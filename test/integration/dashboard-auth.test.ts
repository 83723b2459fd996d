import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sha256Hex } from '../../src/shared/crypto.js';
import {
  LOCKOUT_WINDOW_MS,
  LOGIN_LINK_TTL_MS,
  MAX_LOGIN_FAILURES,
  SESSION_TTL_MS,
} from '../../src/services/dashboard-auth.js';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient, setCookieLine } from '../helpers/dashboard.js';
import { request } from '../helpers/http.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

const PASSWORD = 'correct horse battery staple';

describe('dashboard sessions and CSRF (HTTP, no browser)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ dashboard: { password: PASSWORD } });
  });
  after(() => server.close());

  const keyCount = () => server.runtime.services.credentials.count({ workspaceId: server.workspaceId, oauth: false });

  it('sends visitors without a session to the sign-in page and refuses their POSTs', async () => {
    const client = new DashboardClient(server.httpUrl);
    const page = await client.get('/dashboard/keys');
    assert.equal(page.status, 302);
    assert.equal(page.headers.get('location'), '/dashboard/login?next=%2Fdashboard%2Fkeys');
    const post = await client.post('/dashboard/keys', { name: 'x' });
    assert.equal(post.status, 401);
    assert.match(post.headers.get('content-type') ?? '', /text\/html/);
    assert.match(post.text, /session has ended/);
  });

  it('signs in with the password: an HttpOnly, SameSite=Lax session cookie under /dashboard, stored only hashed', async () => {
    const client = new DashboardClient(server.httpUrl);
    const res = await client.signIn(PASSWORD);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/dashboard');
    const line = setCookieLine(res.headers, 'mailsvc_session');
    assert.ok(line, 'a session cookie is set');
    assert.match(line, /; httponly/i);
    assert.match(line, /; samesite=lax/i);
    assert.match(line, /; path=\/dashboard/i);
    assert.doesNotMatch(line, /; secure/i, 'not Secure over plain HTTP, or the browser would drop it');
    const expires = Date.parse(/expires=([^;]+)/i.exec(line)![1]!);
    assert.ok(Math.abs(expires - (Date.now() + SESSION_TTL_MS)) < 60_000, 'expires with the session');

    const secret = client.cookies.get('mailsvc_session')!;
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    const rows = await server.runtime.store.db.selectFrom('dashboard_sessions').selectAll().execute();
    assert.ok(
      rows.some((r) => r.id_hash === sha256Hex(secret)),
      'the row keeps the hash',
    );
    assert.ok(!rows.some((r) => r.id_hash === secret), 'never the secret itself');

    const keys = await client.get('/dashboard/keys');
    assert.equal(keys.status, 200);
    assert.equal(keys.headers.get('x-frame-options'), 'DENY');
    assert.match(keys.headers.get('content-security-policy') ?? '', /default-src 'none'.*frame-ancestors 'none'/);
    assert.equal(keys.headers.get('cache-control'), 'no-store');
  });

  it('refuses a wrong password with 401 and sets no session', async () => {
    const client = new DashboardClient(server.httpUrl);
    const res = await client.signIn('wrong');
    assert.equal(res.status, 401);
    assert.match(res.text, /Wrong password/);
    assert.equal(client.cookies.has('mailsvc_session'), false);
  });

  it('refuses every mutation without the session CSRF token with 403 and changes nothing', async () => {
    const client = new DashboardClient(server.httpUrl);
    await client.signIn(PASSWORD);
    const other = new DashboardClient(server.httpUrl);
    await other.signIn(PASSWORD);
    const othersToken = (await other.get('/dashboard/keys')).csrf!;
    const ownToken = (await client.get('/dashboard/keys')).csrf!;
    assert.notEqual(othersToken, ownToken, 'tokens are per session');

    const before = await keyCount();
    for (const fields of [
      { name: 'no-token' } as Record<string, string>,
      { name: 'empty', _csrf: '' },
      { name: 'forged', _csrf: 'A'.repeat(43) },
      { name: 'other-session', _csrf: othersToken },
    ]) {
      const res = await client.post('/dashboard/keys', fields);
      assert.equal(res.status, 403, `${fields.name}: ${res.text.slice(0, 200)}`);
      assert.match(res.text, /security token/);
    }
    assert.equal(await keyCount(), before, 'no key was created');
    for (const path of ['/dashboard/suppressions', '/dashboard/domains', '/dashboard/logout', '/dashboard/workspace']) {
      assert.equal((await client.post(path, { email: 'a@b.test', domain: 'x.test' })).status, 403, path);
    }

    // Post/redirect/get: the key is shown by the page the form redirects to, once.
    const ok = await client.post('/dashboard/keys', { name: 'with-token', _csrf: ownToken });
    assert.equal(ok.status, 303);
    assert.equal(ok.headers.get('location'), '/dashboard/keys');
    assert.equal(await keyCount(), before + 1);
    assert.doesNotMatch(ok.text, /sk_live_/, 'not in the redirect');
    const shown = await client.get('/dashboard/keys');
    const secret = /id="new-key-value" readonly value="([^"]+)"/.exec(shown.text)?.[1];
    assert.match(secret ?? '', /^sk_live_/);
    assert.equal(
      (await request(server.httpUrl, 'GET', '/v1/domains', { key: secret! })).status,
      200,
      'the key shown works',
    );
    const refreshed = await client.get('/dashboard/keys');
    assert.doesNotMatch(refreshed.text, /sk_live_[A-Za-z0-9]{43}/, 'shown once: a refresh shows it no more');
    // Another session cannot open the sealed secret, even with the cookie.
    const stolen = await client.post('/dashboard/keys', { name: 'stolen', _csrf: ownToken });
    other.cookies.set('mailsvc_secret', client.cookies.get('mailsvc_secret')!);
    assert.doesNotMatch((await other.get('/dashboard/keys')).text, /sk_live_[A-Za-z0-9]{43}/);
    assert.equal(stolen.status, 303);
  });

  it('refuses a sign-in form posted without its token (login CSRF)', async () => {
    const client = new DashboardClient(server.httpUrl);
    await client.get('/dashboard/login');
    const res = await client.post('/dashboard/login', { password: PASSWORD });
    assert.equal(res.status, 403);
    assert.equal(client.cookies.has('mailsvc_session'), false);
  });

  it('refuses a form that is not urlencoded with 415, not 500', async () => {
    const client = new DashboardClient(server.httpUrl);
    await client.signIn(PASSWORD);
    const res = await fetch(`${server.httpUrl}/dashboard/keys`, {
      method: 'POST',
      headers: {
        cookie: `mailsvc_session=${client.cookies.get('mailsvc_session')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'json' }),
    });
    assert.equal(res.status, 415);
    assert.match(await res.text(), /application\/x-www-form-urlencoded/);
  });

  it('refuses an oversized form with 413, not 500', async () => {
    const client = new DashboardClient(server.httpUrl);
    await client.signIn(PASSWORD);
    const page = await client.get('/dashboard/keys');
    const res = await client.post('/dashboard/keys', { _csrf: page.csrf!, name: 'x'.repeat(300 * 1024) });
    assert.equal(res.status, 413);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  });

  it('answers bad input on forms with a 4xx page in the dashboard', async () => {
    const client = new DashboardClient(server.httpUrl);
    await client.signIn(PASSWORD);
    const { csrf } = await client.get('/dashboard/keys');
    const cases: Array<[string, Record<string, string>, number]> = [
      ['/dashboard/keys', { name: '   ' }, 400],
      ['/dashboard/domains', { domain: 'not a domain' }, 400],
      ['/dashboard/suppressions', { email: 'nope' }, 400],
      ['/dashboard/suppressions/remove', { email: 'never@listed.test' }, 404],
      ['/dashboard/keys/not-an-id/revoke', {}, 404],
      ['/dashboard/webhooks/not-an-id/rotate', {}, 404],
    ];
    for (const [path, fields, status] of cases) {
      const res = await client.post(path, { _csrf: csrf!, ...fields });
      assert.equal(res.status, status, `${path}: ${res.text.slice(0, 300)}`);
      assert.match(res.text, /role="alert"/);
    }
    // A refused form comes back with what was typed.
    const domain = await client.post('/dashboard/domains', { _csrf: csrf!, domain: 'not a domain' });
    assert.match(domain.text, /name="domain"[^>]*value="not a domain"/);
    for (const [url, events, message] of [
      ['not a url', '*', /must be an absolute URL/],
      [
        'http://127.0.0.1:9/hook',
        'email.sent',
        /must be an https:\/\/ URL .*webhooks\.allowPrivateNetworks: MAILSVC_WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true/,
      ],
      ['https://hooks.example.test/x', 'email.nope', /unknown event type "email\.nope"/],
    ] as const) {
      const hook = await client.post('/dashboard/webhooks', { _csrf: csrf!, url, events });
      assert.equal(hook.status, 400, hook.text.slice(0, 300));
      assert.match(hook.text, /<h1>Webhooks<\/h1>/, 'the webhooks page, not an error page');
      assert.match(hook.text.replace(/&quot;/g, '"').replace(/&#39;/g, "'"), message);
      assert.ok(hook.text.includes(`value="${url.replace(/&/g, '&amp;')}"`), `keeps the URL typed: ${url}`);
      assert.ok(hook.text.includes(`value="${events}"`), 'keeps the events typed');
    }
    // Every other form: a 4xx page with the reason, never a 500.
    const hook = await server.runtime.services.webhooks.register(server.workspaceId, 'v1', {
      url: 'https://93.184.216.34/forms',
      events: ['email.sent'],
    });
    const more: Array<[string, Record<string, string>, number, RegExp]> = [
      [
        `/dashboard/webhooks/${hook.webhook.id}/test`,
        { type: 'email.bounced' },
        400,
        /type: must be an event type this endpoint takes: email\.sent/,
      ],
      [`/dashboard/webhooks/${hook.webhook.id}/test`, { type: 'nonsense' }, 400, /type: must be an event type/],
      ['/dashboard/webhooks/not-an-id/delete', {}, 404, /not found/],
      ['/dashboard/subscribers', { email: 'not an address' }, 400, /email/],
      ['/dashboard/templates', { name: '', html: '<p>x</p>' }, 400, /name/],
      [
        '/dashboard/campaigns',
        { subject: '', from_name: 'A', from_email: 'a@nowhere.test', html: '<p>x</p>' },
        400,
        /subject/,
      ],
      ['/dashboard/campaigns/not-an-id/send', {}, 404, /not found/],
      ['/dashboard/emails/00000000-0000-7000-8000-000000000000/cancel', {}, 404, /not found/],
      ['/dashboard/templates/nope/publish', {}, 404, /not found/],
    ];
    for (const [path, fields, status, message] of more) {
      const res = await client.post(path, { _csrf: csrf!, ...fields });
      assert.equal(res.status, status, `${path}: ${res.text.slice(0, 300)}`);
      assert.match(res.text, /role="alert"/, path);
      assert.match(res.text.replace(/&quot;/g, '"'), message, path);
    }
    for (const path of [
      '/dashboard/subscribers/nope',
      '/dashboard/campaigns/nope',
      '/dashboard/templates/nope',
      `/dashboard/webhooks/${hook.webhook.id}/deliveries/msg_nope`,
    ]) {
      assert.equal((await client.get(path)).status, 404, path);
    }
    assert.equal((await client.get('/dashboard/emails?from=not-a-date')).status, 400);

    const template = await client.post('/dashboard/templates', {
      _csrf: csrf!,
      name: 'Kept',
      alias: 'not a valid alias!',
      subject: 'S',
      html: '<p>kept body</p>',
    });
    assert.equal(template.status, 400);
    assert.match(template.text, /alias: must be/);
    assert.match(template.text, /&lt;p&gt;kept body&lt;\/p&gt;<\/textarea>/);
    for (const path of [
      '/dashboard/emails/not-an-id',
      '/dashboard/domains/nope.test',
      '/dashboard/webhooks/nope',
      '/dashboard/nothing-here',
    ]) {
      assert.equal((await client.get(path)).status, 404, path);
    }
    assert.equal((await client.get('/dashboard/emails?status=bogus')).status, 400);
  });

  it('shows the notice of an action once, from a cookie; a notice in the URL is ignored', async () => {
    const client = new DashboardClient(server.httpUrl);
    await client.signIn(PASSWORD);
    const crafted = await client.get('/dashboard/suppressions?notice=Your%20account%20is%20closed');
    assert.doesNotMatch(crafted.text, /account is closed/);
    const added = await client.post('/dashboard/suppressions', { _csrf: crafted.csrf!, email: 'gone@dest.test' });
    assert.equal(added.status, 303);
    assert.equal(added.headers.get('location'), '/dashboard/suppressions');
    const next = await client.get('/dashboard/suppressions');
    assert.match(next.text, /role="status">gone@dest\.test is suppressed\./);
    const again = await client.get('/dashboard/suppressions');
    assert.doesNotMatch(again.text, /role="status"/, 'shown once');
  });

  it('signs out: the session stops working at once', async () => {
    const client = new DashboardClient(server.httpUrl);
    await client.signIn(PASSWORD);
    const secret = client.cookies.get('mailsvc_session')!;
    const page = await client.get('/dashboard/emails');
    const out = await client.post('/dashboard/logout', { _csrf: page.csrf! });
    assert.equal(out.status, 303);
    assert.equal(client.cookies.has('mailsvc_session'), false, 'the cookie is cleared');
    const replay = await fetch(`${server.httpUrl}/dashboard/emails`, {
      headers: { cookie: `mailsvc_session=${secret}` },
      redirect: 'manual',
    });
    assert.equal(replay.status, 302, 'the old cookie no longer signs in');
  });

  it('escapes what users named, and switches workspace when there are several', async () => {
    const ws = await server.runtime.services.workspaces.create('<b>evil</b> & co');
    const client = new DashboardClient(server.httpUrl);
    await client.signIn(PASSWORD);
    const page = await client.get('/dashboard/keys');
    assert.match(page.text, /&lt;b&gt;evil&lt;\/b&gt; &amp; co/);
    assert.doesNotMatch(page.text, /<b>evil/);
    const switched = await client.post('/dashboard/workspace', { _csrf: page.csrf!, workspace: ws.id });
    assert.equal(switched.status, 303);
    const after = await client.post('/dashboard/keys', { _csrf: page.csrf!, name: 'in-second' });
    assert.equal(after.status, 303);
    const listed = await server.runtime.services.credentials.list({ workspaceId: ws.id, oauth: false });
    assert.deepEqual(
      listed.map((k) => k.name),
      ['in-second'],
      'the key belongs to the chosen workspace',
    );
    const unknown = await client.post('/dashboard/workspace', { _csrf: page.csrf!, workspace: 'nope' });
    assert.equal(unknown.status, 404);
  });
});

describe('dashboard sign-in with Secure cookies behind an HTTPS proxy', () => {
  it('marks the session cookie Secure when the request came over HTTPS', async () => {
    const server = await startTestServer({ dashboard: { password: PASSWORD }, http: { trustProxy: true } });
    try {
      const client = new DashboardClient(server.httpUrl);
      const https = { 'x-forwarded-proto': 'https' };
      const form = await client.get('/dashboard/login', https);
      assert.match(setCookieLine(form.headers, 'mailsvc_prelogin') ?? '', /; secure/i);
      const res = await client.post('/dashboard/login', { _csrf: form.csrf!, password: PASSWORD }, https);
      assert.equal(res.status, 303);
      const line = setCookieLine(res.headers, 'mailsvc_session') ?? '';
      for (const flag of [/; secure(;|$)/i, /; samesite=lax/i, /; httponly/i]) assert.match(line, flag);
    } finally {
      await server.close();
    }
  });
});

describe('dashboard lockout and one-time links', () => {
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ dashboard: { password: PASSWORD } }, { clock });
  });
  after(() => server.close());

  it(`locks a client out after ${MAX_LOGIN_FAILURES} failed sign-ins, even with the right password, until the window passes`, async () => {
    const client = new DashboardClient(server.httpUrl);
    for (let i = 0; i < MAX_LOGIN_FAILURES; i++) assert.equal((await client.signIn('guess-' + i)).status, 401);
    const locked = await client.signIn(PASSWORD);
    assert.equal(locked.status, 429);
    assert.match(locked.text, /Too many failed sign-ins/);
    assert.ok(Number(locked.headers.get('retry-after')) > 0);
    assert.equal(client.cookies.has('mailsvc_session'), false);

    clock.advance(LOCKOUT_WINDOW_MS);
    const again = await client.signIn(PASSWORD);
    assert.equal(again.status, 303);
    assert.ok(client.cookies.has('mailsvc_session'));
  });

  it('`mailsvc dashboard login` prints a link that signs in once, and only once', async () => {
    const res = await runCliProcess(['dashboard', 'login'], {
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: server.dir,
      MAILSVC_HTTP_PUBLIC_URL: server.httpUrl,
      MAILSVC_LOG_LEVEL: 'warn',
    });
    assert.equal(res.code, 0, res.stderr);
    const url = /^(http\S+)$/m.exec(res.stdout)?.[1];
    assert.ok(url?.startsWith(`${server.httpUrl}/dashboard/login/`), res.stdout);
    const path = new URL(url!).pathname;
    const token = path.split('/').at(-1)!;
    const rows = await server.runtime.store.db.selectFrom('dashboard_login_tokens').selectAll().execute();
    assert.ok(
      rows.some((r) => r.token_hash === sha256Hex(token)) && !rows.some((r) => r.token_hash === token),
      'stored hashed',
    );

    const first = new DashboardClient(server.httpUrl);
    const shown = await first.get(path);
    assert.equal(shown.status, 200, 'opening the link only shows a button (link scanners must not use it up)');
    const signedIn = await first.post(path, { _csrf: shown.csrf! });
    assert.equal(signedIn.status, 303);
    assert.equal((await first.get('/dashboard/emails')).status, 200);

    const second = new DashboardClient(server.httpUrl);
    const again = await second.get(path);
    const refused = await second.post(path, { _csrf: again.csrf! });
    assert.equal(refused.status, 401);
    assert.match(refused.text, /already used, has expired/);
    assert.equal(second.cookies.has('mailsvc_session'), false);
  });

  it('refuses an expired link and a made-up one', async () => {
    const { url } = await server.runtime.services.dashboardAuth.createLoginLink();
    const path = new URL(url).pathname;
    clock.advance(LOGIN_LINK_TTL_MS);
    const client = new DashboardClient(server.httpUrl);
    const shown = await client.get(path);
    assert.equal((await client.post(path, { _csrf: shown.csrf! })).status, 401);
    assert.equal((await client.post('/dashboard/login/' + 'x'.repeat(43), { _csrf: shown.csrf! })).status, 401);
    assert.equal((await client.post('/dashboard/login/short', { _csrf: shown.csrf! })).status, 401);
  });

  it('ends a session when it expires', async () => {
    const client = new DashboardClient(server.httpUrl);
    assert.equal((await client.signIn(PASSWORD)).status, 303);
    assert.equal((await client.get('/dashboard/emails')).status, 200);
    clock.advance(SESSION_TTL_MS);
    assert.equal((await client.get('/dashboard/emails')).status, 302);
  });
});
