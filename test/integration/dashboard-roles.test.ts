import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { HttpDeps } from '../../src/intake/http/context.js';
import { privateRoutes } from '../../src/intake/http/dashboard/index.js';
import type { RouteDeclaration } from '../../src/intake/http/dashboard/routes.js';
import { allows, roleTableMarkdown, ROLES, type Role } from '../../src/services/users.js';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * Roles in the dashboard (issue 32): every signed-in route, as the routes declare themselves
 * (so a route added later is in this table without anyone editing it), requested by each role:
 * what the role's permissions allow is served, anything else is a 403 in the dashboard's own
 * page before any handler runs. Then the team page's guard rails, and the CLI's.
 */

const SHARED = 'roles test shared password';
const PASSWORD = 'a long enough password';
/** Stands for every :param: the role check runs before a handler looks anything up. */
const PARAM = '0190c0de-0000-7000-8000-000000000000';

type Who = Role | 'link';

describe('dashboard roles, per route', () => {
  let server: TestServer;
  let declared: RouteDeclaration[];
  const clients = new Map<Who, { client: DashboardClient; csrf: string }>();
  const emailOf = (role: Role) => `${role}@roles.test`;

  const sessionFor = async (who: Who): Promise<{ client: DashboardClient; csrf: string }> => {
    const { dashboardAuth, users } = server.runtime.services;
    let secret: string;
    if (who === 'link') {
      const link = await dashboardAuth.createLoginLink();
      secret = (
        await dashboardAuth.signInWithLink(new URL(link.url).pathname.split('/').at(-1)!, { address: '127.0.0.1' })
      ).secret;
    } else {
      const user = (await users.list(server.workspaceId)).find((u) => u.email === emailOf(who))!;
      const signedIn = await dashboardAuth.signInUser(user.id, { address: '127.0.0.1' });
      assert.ok('secret' in signedIn, 'no second factor here');
      secret = signedIn.secret;
    }
    const client = new DashboardClient(server.httpUrl);
    client.cookies.set('mailsvc_session', secret);
    const home = await client.get('/dashboard/overview');
    assert.equal(home.status, 200, `${who} signs in`);
    return { client, csrf: home.csrf ?? assert.fail('a CSRF token on the overview') };
  };

  before(async () => {
    server = await startTestServer({ dashboard: { password: SHARED } });
    for (const role of ROLES)
      await server.runtime.services.users.create({
        email: emailOf(role),
        password: PASSWORD,
        workspaceId: server.workspaceId,
        role,
      });
    declared = privateRoutes({ services: server.runtime.services, config: server.config } as HttpDeps).routes.declared;
    for (const who of [...ROLES, 'link'] as const) clients.set(who, await sessionFor(who));
  });
  after(() => server.close());

  it('every route declares what it needs, and the table covers the pages people use', () => {
    assert.ok(declared.length >= 60, `${declared.length} routes`);
    for (const path of ['/keys', '/webhooks/:id', '/team', '/team/role', '/team/remove', '/team/invite', '/audit'])
      assert.ok(
        declared.some((r) => r.path === path),
        path,
      );
    assert.deepEqual(
      declared.filter((r) => r.method === 'POST' && r.needs === 'read'),
      [],
      'no POST is open to read-only roles',
    );
  });

  it('role × route: allowed is served, forbidden is a 403 in the dashboard layout', async () => {
    const failures: string[] = [];
    // Signing out last: it ends the session the rest of the table uses.
    const routes = [...declared].sort((a, b) => Number(a.path === '/logout') - Number(b.path === '/logout'));
    for (const who of [...ROLES, 'link'] as const) {
      const { client, csrf } = clients.get(who)!;
      const role: Role = who === 'link' ? 'owner' : who;
      for (const route of routes) {
        const path = `/dashboard${route.path === '/' ? '' : route.path}`.replace(/:[A-Za-z]+/g, PARAM);
        const res = route.method === 'GET' ? await client.get(path) : await client.post(path, { _csrf: csrf });
        const allowed = route.needs === 'session' || allows(role, route.needs);
        // A handler may refuse for reasons of its own (one's own account needs a user, not a shared session;
        // requiring two-factor is an owner's): only the route check's refusal, which names the role, counts here.
        if (allowed && res.status === 403 && /Your role \(\w+\) may not (change this|see this page)/.test(res.text))
          failures.push(`${who} ${route.method} ${route.path}: 403, expected it served`);
        if (allowed && res.status >= 500) failures.push(`${who} ${route.method} ${route.path}: ${res.status}`);
        if (!allowed) {
          if (res.status !== 403) failures.push(`${who} ${route.method} ${route.path}: ${res.status}, expected 403`);
          else if (!/<nav>/.test(res.text) || !/Your role \(\w+\) may not/.test(res.text))
            failures.push(`${who} ${route.method} ${route.path}: 403 not in the dashboard's page`);
        }
      }
    }
    assert.deepEqual(failures, []);
  });

  it('a forged POST by a viewer changes nothing', async () => {
    const viewer = await sessionFor('viewer');
    const before = (await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false }))
      .length;
    const res = await viewer.client.post('/dashboard/keys', { _csrf: viewer.csrf, name: 'forged' });
    assert.equal(res.status, 403);
    assert.equal(
      (await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false })).length,
      before,
    );
  });

  it('the team page: invite shows the link once; an admin cannot make or remove owners; the last owner stays', async () => {
    const owner = await sessionFor('owner');
    const admin = await sessionFor('admin');
    const team = await admin.client.get('/dashboard/team');
    assert.equal(team.status, 200);
    assert.doesNotMatch(team.text, /<option value="owner"/, 'an admin is not offered the owner role');
    assert.match(team.text, /action="\/dashboard\/team\/invite"/);

    const invited = await admin.client.post('/dashboard/team/invite', {
      _csrf: admin.csrf,
      email: 'new@roles.test',
      role: 'developer',
    });
    assert.equal(invited.status, 303);
    const shown = await admin.client.get('/dashboard/team');
    const url =
      /value="(http[^"]+\/dashboard\/invite\/[^"]+)"/.exec(shown.text)?.[1] ??
      assert.fail('the invitation link on the page');
    assert.equal((await admin.client.get('/dashboard/team')).text.includes(url), false, 'shown once');
    const token = url.split('/').at(-1)!;
    assert.ok(await server.runtime.services.users.findInvite(token), 'a working link');
    const everything = JSON.stringify(
      await server.runtime.services.audit.list({ workspaceId: server.workspaceId, instance: true }, { limit: '100' }),
    );
    assert.ok(
      everything.includes('new@roles.test') && !everything.includes(token),
      'the invitation is recorded, its link is not',
    );

    const asOwner = await admin.client.post('/dashboard/team/invite', {
      _csrf: admin.csrf,
      email: 'boss@roles.test',
      role: 'owner',
    });
    assert.equal(asOwner.status, 403);
    assert.match(asOwner.text, /Only an owner can make, demote or remove an owner/);
    assert.equal(
      (
        await admin.client.post('/dashboard/team/role', {
          _csrf: admin.csrf,
          email: emailOf('developer'),
          role: 'owner',
        })
      ).status,
      403,
    );
    assert.equal(
      (await admin.client.post('/dashboard/team/remove', { _csrf: admin.csrf, email: emailOf('owner') })).status,
      403,
    );
    assert.equal(
      (
        await admin.client.post('/dashboard/team/role', {
          _csrf: admin.csrf,
          email: emailOf('viewer'),
          role: 'developer',
        })
      ).status,
      303,
    );
    assert.equal(await roleOf(emailOf('viewer')), 'developer');
    assert.equal(
      (await admin.client.post('/dashboard/team/role', { _csrf: admin.csrf, email: emailOf('viewer'), role: 'viewer' }))
        .status,
      303,
    );

    // The last owner: neither demoted nor removed, even by themselves.
    const demote = await owner.client.post('/dashboard/team/role', {
      _csrf: owner.csrf,
      email: emailOf('owner'),
      role: 'admin',
    });
    assert.equal(demote.status, 409);
    assert.match(demote.text, /last owner/);
    assert.equal(
      (await owner.client.post('/dashboard/team/remove', { _csrf: owner.csrf, email: emailOf('owner') })).status,
      409,
    );
    assert.equal(await roleOf(emailOf('owner')), 'owner');

    // Removal ends the person's sessions at once.
    const developer = await sessionFor('developer');
    assert.equal(
      (await owner.client.post('/dashboard/team/remove', { _csrf: owner.csrf, email: emailOf('developer') })).status,
      303,
    );
    const after = await developer.client.get('/dashboard/overview');
    assert.equal(after.status, 302);
    assert.match(after.headers.get('location') ?? '', /\/dashboard\/login/);
    assert.equal(await roleOf(emailOf('developer')), undefined);
    await server.runtime.services.users.invite({
      email: emailOf('developer'),
      role: 'developer',
      workspaceId: server.workspaceId,
    });

    const audit = await server.runtime.services.audit.list(
      { workspaceId: server.workspaceId, instance: false },
      { object_type: 'user' },
    );
    const actions = audit.data.map((e) => e.action);
    for (const a of ['user.removed', 'user.role_changed', 'user.invited'])
      assert.ok(actions.includes(a), `${a} in ${actions.join(', ')}`);
    const removed = audit.data.find((e) => e.action === 'user.removed')!;
    const ownerId = (await server.runtime.services.users.list(server.workspaceId)).find(
      (u) => u.email === emailOf('owner'),
    )!.id;
    assert.deepEqual(removed.actor, { type: 'user', id: ownerId }, 'the user who acted, by id');
  });

  const roleOf = async (email: string) =>
    (await server.runtime.services.users.list(server.workspaceId)).find((u) => u.email === email)?.role;

  it('the audit page filters by actor, action, object type and time, keyset paged', async () => {
    const owner = await sessionFor('owner');
    for (let i = 0; i < 55; i++)
      await server.runtime.services.suppressions.add(server.workspaceId, { email: `s${i}@paged.test` });
    const first = await owner.client.get('/dashboard/audit?action=suppression.&actor_type=cli');
    assert.equal(first.status, 200);
    assert.doesNotMatch(first.text, /suppression\.added/, 'the test process acts as the server itself, not the CLI');
    const system = await owner.client.get(
      '/dashboard/audit?action=suppression.added&object_type=suppression&actor_type=system',
    );
    assert.equal((system.text.match(/<code>suppression\.added<\/code>/g) ?? []).length, 50);
    const next =
      /href="(\/dashboard\/audit\?[^"]+)">Older entries/.exec(system.text)?.[1]?.replace(/&amp;/g, '&') ??
      assert.fail('a link to the next page');
    const second = await owner.client.get(next);
    assert.equal((second.text.match(/<code>suppression\.added<\/code>/g) ?? []).length, 5);
    assert.doesNotMatch(second.text, /Older entries/);
    const future = await owner.client.get('/dashboard/audit?since=2999-01-01');
    assert.match(future.text, /No entries match/);
    const bad = await owner.client.get('/dashboard/audit?since=yesterday');
    assert.equal(bad.status, 400);
    assert.match(bad.text, /since: must be an ISO 8601 time/);
    const backwards = await owner.client.get('/dashboard/audit?since=2026-02-01&until=2026-01-01');
    assert.equal(backwards.status, 400);
    const viewer = await sessionFor('viewer');
    assert.equal((await viewer.client.get('/dashboard/audit')).status, 200, 'a viewer reads the log');
  });

  it('the CLI changes roles and removes users with the same guard rails', async () => {
    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const ok = await runCliProcess(['users', 'role', emailOf('viewer'), 'admin'], env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /viewer@roles\.test is now admin/);
    const bad = await runCliProcess(['users', 'role', emailOf('viewer'), 'boss'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /role/);
    const last = await runCliProcess(['users', 'remove', emailOf('owner')], env);
    assert.notEqual(last.code, 0);
    assert.match(last.stderr, /last owner/);
    const gone = await runCliProcess(['users', 'remove', emailOf('viewer')], env);
    assert.equal(gone.code, 0, gone.stderr);
    assert.equal(await roleOf(emailOf('viewer')), undefined);
    const nobody = await runCliProcess(['users', 'remove', 'nobody@roles.test'], env);
    assert.notEqual(nobody.code, 0);
    assert.match(nobody.stderr, /not a member/);
  });
});

describe('the roles table in docs/operations.md', () => {
  it('is the one ROLE_PERMISSIONS makes', () => {
    const docs = readFileSync(repoPath('docs/operations.md'), 'utf8');
    assert.ok(
      docs.includes(roleTableMarkdown()),
      `docs/operations.md must contain, as generated by roleTableMarkdown():\n${roleTableMarkdown()}`,
    );
  });
});
