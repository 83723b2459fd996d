import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Role } from '../../src/services/users.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Roles in a real browser (issue 32): a viewer walks every page the navigation offers and the
 * detail pages behind them and finds no secret and no control that changes anything; a
 * developer sees the webhook's (masked) signing secret but no Keys form, and a POST forged from the
 * page is refused.
 */

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install it with \`apt-get install -y chromium\``;
/** The only POST forms a viewer may see: signing out (and switching workspace, with several). */
const SESSION_FORMS = new Set(['/dashboard/logout', '/dashboard/workspace']);

describe('roles in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let webhookSecret: string;
  let keySecret: string;
  const detailPages: string[] = [];

  const signedIn = async (role: Role): Promise<{ context: BrowserContext; page: Page }> => {
    const { users, dashboardAuth } = server.runtime.services;
    const user = await users.create({
      email: `${role}@browser.test`,
      password: 'a long enough password',
      workspaceId: server.workspaceId,
      role,
    });
    const session = await dashboardAuth.signInUser(user.id, { address: '127.0.0.1' });
    assert.ok('secret' in session, 'no second factor here');
    const { secret } = session;
    const context = await browser.newContext();
    await context.addCookies([
      {
        name: 'mailsvc_session',
        value: secret,
        domain: '127.0.0.1',
        path: '/dashboard',
        httpOnly: true,
        sameSite: 'Lax',
      },
    ]);
    return { context, page: await context.newPage() };
  };

  before(async () => {
    server = await startTestServer({ webhooks: { allowPrivateNetworks: true } });
    const s = server.runtime.services;
    const ws = server.workspaceId;
    keySecret = await server.key();
    const hook = await s.webhooks.register(ws, 'v1', { url: 'http://127.0.0.1:9/hooks', events: ['email.delivered'] });
    webhookSecret = hook.secret;
    const domain = await s.domains.add(ws, { domain: 'roles.example.test' });
    const template = await s.templates.create(ws, { name: 'Welcome', subject: 'Hi', html: '<p>Hi {{name}}</p>' });
    await s.suppressions.add(ws, { email: 'gone@roles.example.test' });
    await s.subscribers.upsert(ws, { email: 'reader@roles.example.test' });
    detailPages.push(
      `/dashboard/webhooks/${hook.webhook.id}`,
      `/dashboard/domains/${domain.id}`,
      `/dashboard/templates/${template.id}`,
      '/dashboard/campaigns/new',
    );
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it("a viewer's pages show no secret and no control that changes anything", async () => {
    const { context, page } = await signedIn('viewer');
    await page.goto(`${server.httpUrl}/dashboard/overview`);
    const nav = await page.locator('nav a').evaluateAll((links) => links.map((a) => a.getAttribute('href') ?? ''));
    assert.ok(
      nav.includes('/dashboard/keys') && nav.includes('/dashboard/team') && nav.includes('/dashboard/audit'),
      nav.join(' '),
    );
    const problems: string[] = [];
    for (const path of [...nav, ...detailPages]) {
      const res = await page.goto(`${server.httpUrl}${path}`);
      if (path === '/dashboard/campaigns/new') {
        // Writing a campaign is sending: a viewer is refused the page itself.
        if (res?.status() !== 403) problems.push(`${path}: ${res?.status()}, expected 403`);
        continue;
      }
      if (res?.status() !== 200) problems.push(`${path}: ${res?.status()}`);
      const actions = await page
        .locator('form[method=post]')
        .evaluateAll((forms) => forms.map((f) => f.getAttribute('action') ?? ''));
      for (const action of actions)
        if (!SESSION_FORMS.has(action)) problems.push(`${path}: a form posting to ${action}`);
      const html = await page.content();
      if (html.includes(webhookSecret)) problems.push(`${path}: shows the webhook signing secret`);
      if (html.includes(keySecret)) problems.push(`${path}: shows an API key`);
      if (/whsec_/.test(html) || /<dt>Secret<\/dt>/.test(html))
        problems.push(`${path}: shows (a hint of) a signing secret`);
    }
    assert.deepEqual(problems, []);
    await context.close();
  });

  it('a developer sees the signing secret, but cannot reach the Keys form; a forged POST is refused', async () => {
    const { context, page } = await signedIn('developer');
    await page.goto(`${server.httpUrl}${detailPages[0]!}`);
    // The secret itself is shown once, to whoever sets it; the page shows its masked hint to roles with `secrets`.
    assert.equal(await page.locator('dt', { hasText: 'Secret' }).count(), 1, 'developers have the secrets permission');
    assert.equal((await page.content()).includes(webhookSecret), false);
    assert.equal(await page.locator('form[action$="/rotate"]').count(), 0, 'but manage no webhooks');

    await page.goto(`${server.httpUrl}/dashboard/keys`);
    assert.equal(await page.locator('form[action="/dashboard/keys"]').count(), 0);
    assert.equal(await page.getByText('Create a key').count(), 0);
    assert.equal(await page.locator('form[action$="/revoke"]').count(), 0);
    const csrf = await page.locator('form[action="/dashboard/logout"] input[name=_csrf]').inputValue();
    const before = (await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false }))
      .length;
    const forged = await page.request.post(`${server.httpUrl}/dashboard/keys`, {
      form: { _csrf: csrf, name: 'forged' },
    });
    assert.equal(forged.status(), 403);
    assert.match(await forged.text(), /Your role \(developer\) may not change this/);
    assert.equal(
      (await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false })).length,
      before,
    );
    await context.close();
  });
});
