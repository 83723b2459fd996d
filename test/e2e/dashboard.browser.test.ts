import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import nodemailer from 'nodemailer';
import type { Browser, Page } from 'playwright-core';
import { eventually } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The dashboard in a real browser (Debian's Chromium driven by playwright-core), against the
 * real server: what a newcomer does on a first visit. A screenshot of every page is kept in
 * test-artifacts/dashboard/ (git-ignored) for people to look at.
 */

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/dashboard/', import.meta.url));
const PASSWORD = 'dashboard-e2e-password';
/** Added in the dashboard and never verified: test keys may send from it (the newcomer's path). */
const SENDER = 'shop.example.test';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install it with \`apt-get install -y chromium\` (.ci/run does when it runs as root)`;

describe('dashboard in Chromium', { skip }, () => {
  let dns: TestDns;
  let receiver: WebhookReceiver;
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dns = await startDnsServer();
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      dashboard: { password: PASSWORD },
      delivery: { enabled: true, dnsServers: [dns.server], pollInterval: 50, signingThreads: 0 },
      dkim: { host: 'dkim.mailsvc.test' },
      // The endpoint is the loopback receiver of this test.
      webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
      smtp: { inbound: { enabled: true, port: 0 } },
    });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    // Phone width: every page must work at 375 px.
    page = await browser.newPage({ viewport: { width: 375, height: 812 } });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await dns?.close();
    await receiver?.close();
  });

  const url = (path: string) => server.httpUrl + path;
  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
  /** Nothing wider than the phone's screen but the tables, which scroll inside their box. */
  const assertFitsPhone = async () => {
    // Runs in the page, where `document` exists; the test's own types have no DOM.
    const width = await page.evaluate('document.documentElement.scrollWidth');
    assert.ok(typeof width === 'number' && width <= 375, `${page.url()} is ${width}px wide at a 375px viewport`);
  };

  it('signs in with the password', async () => {
    await page.goto(url('/dashboard'));
    assert.match(page.url(), /\/dashboard\/login/);
    await shot('login');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/dashboard\/overview$/);
    assert.equal(await page.textContent('h1'), 'Overview');
    await assertFitsPhone();
  });

  it('creates a key, shows it once, and a revoked key is refused by the API', async () => {
    await page.goto(url('/dashboard/keys'));
    await page.fill('input[name=name]', 'browser key');
    await page.click('form[action="/dashboard/keys"] button[type=submit]');
    const secret = await page.inputValue('#new-key-value');
    assert.match(secret, /^sk_live_[A-Za-z0-9]{43}$/);
    assert.ok(await page.isVisible('button[data-copy="new-key-value"]'), 'with a copy button');
    await shot('keys-created');
    await assertFitsPhone();
    const ok = await request(server.httpUrl, 'GET', '/v1/domains', { key: secret });
    assert.equal(ok.status, 200, show(ok));

    await page.goto(url('/dashboard/keys'));
    assert.equal((await page.content()).includes(secret), false, 'the key is not shown again');
    const row = page.locator('tr', { hasText: 'browser key' });
    await row.locator('button', { hasText: 'Revoke' }).click();
    await page.waitForSelector('[role=status]');
    assert.match((await page.textContent('[role=status]')) ?? '', /revoked/);
    assert.match((await row.textContent()) ?? '', /revoked/);
    await shot('keys-revoked');
    const refused = await request(server.httpUrl, 'GET', '/v1/domains', { key: secret });
    assert.equal(refused.status, 401, show(refused));
  });

  it('adds a domain and shows the DNS records to publish, with copy buttons', async () => {
    await page.goto(url('/dashboard/domains'));
    await page.fill('input[name=domain]', SENDER);
    await page.click('form[action="/dashboard/domains"] button[type=submit]');
    await page.waitForURL(/\/dashboard\/domains\/[0-9a-f-]{36}$/);
    assert.equal(await page.textContent('h1'), SENDER);
    const { customer } = await server.runtime.services.domains.recordsToPublish(server.workspaceId, SENDER);
    assert.ok(customer.length > 0);
    for (const record of customer) {
      assert.ok(await page.locator(`input[value="${record.name}"]`).count(), `shows ${record.name}`);
      assert.ok(await page.locator(`input[value="${record.value}"]`).count(), `shows ${record.value}`);
    }
    assert.ok((await page.locator('button[data-copy]').count()) >= customer.length * 2);
    // Verify asks the test DNS server, which has no records for this domain yet.
    await page.click('button:has-text("Check DNS now")');
    await page.waitForSelector('[role=status]');
    assert.match((await page.textContent('[role=status]')) ?? '', /not verified yet/);
    await shot('domain');
    await assertFitsPhone();
  });

  it('shows an email sent with a test key, with its events, attempts and a sandboxed preview', async () => {
    await page.goto(url('/dashboard/keys'));
    await page.fill('input[name=name]', 'trying it out');
    await page.check('input[name=test]');
    await page.click('form[action="/dashboard/keys"] button[type=submit]');
    const key = await page.inputValue('#new-key-value');
    assert.match(key, /^sk_test_/);
    const sent = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: `Shop <hello@${SENDER}>`, to: 'customer@dest.test', subject: 'Your <receipt>', html: '<h1>Thanks</h1><script>parent.document.title="pwned"</script>' },
    });
    assert.equal(sent.status, 200, show(sent));
    const id = sent.body.id as string;
    await eventually(async () => (await server.runtime.services.emails.get(server.workspaceId, id)).status === 'delivered', 15_000, 'simulated delivery');

    await page.goto(url('/dashboard/emails?to=customer%40dest'));
    await page.click('a:has-text("Your <receipt>")');
    await page.waitForURL(new RegExp(`/dashboard/emails/${id}$`));
    assert.equal(await page.textContent('h1'), 'Your <receipt>');
    const events = (await page.textContent('#events')) ?? '';
    for (const type of ['email.sent', 'email.delivered']) assert.ok(events.includes(type), `timeline has ${type}: ${events}`);
    assert.match((await page.textContent('body')) ?? '', /250 2\.0\.0 OK \(simulated\)/, 'the remote reply of the attempt');
    assert.match((await page.textContent('pre')) ?? '', /Subject: Your <receipt>/, 'headers');
    assert.equal(await page.getAttribute('iframe.preview', 'sandbox'), '');
    const frame = page.frameLocator('iframe.preview');
    assert.equal(await frame.locator('h1').textContent(), 'Thanks');
    assert.notEqual(await page.title(), 'pwned', 'scripts in the preview do not run');
    await page.locator('iframe.preview').screenshot({ path: `${ARTIFACTS}email-preview.png` });
    await shot('email');
    await assertFitsPhone();

    await page.goto(url('/dashboard/emails?status=bounced'));
    assert.equal(await page.locator('a:has-text("Your <receipt>")').count(), 0, 'the status filter hides it');
    await page.goto(url('/dashboard/emails'));
    await shot('emails');
  });

  it('lists, adds and removes suppressions', async () => {
    await page.goto(url('/dashboard/suppressions'));
    await page.fill('input[name=email]', 'nomore@dest.test');
    await page.click('form[action="/dashboard/suppressions"] button[type=submit]');
    await page.waitForSelector('[role=status]');
    const row = page.locator('tr', { hasText: 'nomore@dest.test' });
    assert.equal(await row.count(), 1);
    await shot('suppressions');
    await assertFitsPhone();
    await row.locator('button', { hasText: 'Remove' }).click();
    await page.waitForSelector('[role=status]:has-text("no longer suppressed")');
    assert.equal(await page.locator('tr', { hasText: 'nomore@dest.test' }).count(), 0);
  });

  it('adds a webhook endpoint, shows its deliveries with the response, replays one and rotates the secret', async () => {
    receiver.reply(() => ({ status: 200, body: 'thanks from the receiver' }));
    await page.goto(url('/dashboard/webhooks'));
    await page.fill('input[name=url]', `${receiver.url}/hooks`);
    await page.fill('input[name=events]', 'email.delivered');
    await page.click('form[action="/dashboard/webhooks"] button[type=submit]');
    const first = await page.inputValue('#new-secret');
    assert.match(first, /^whsec_/);
    const hookPath = await page.getAttribute('form[action$="/rotate"]', 'action');
    assert.match(hookPath ?? '', /^\/dashboard\/webhooks\/[0-9a-f-]{36}\/rotate$/);

    const key = await server.key({ test: true });
    const sent = await request(server.httpUrl, 'POST', '/v1/emails', { key, body: { from: `hello@${SENDER}`, to: 'hooked@dest.test', subject: 'Hooked', text: 'hi' } });
    assert.equal(sent.status, 200, show(sent));
    await receiver.waitFor(1);
    const detail = url(hookPath!.replace(/\/rotate$/, ''));
    await eventually(async () => {
      await page.goto(detail);
      return (await page.locator('tr.delivery', { hasText: 'succeeded' }).count()) === 1;
    }, 15_000, 'the delivery shown as succeeded');
    // Under it, its attempt: outcome, HTTP status and the response.
    const attempt = page.locator('tr.attempt');
    assert.equal(await attempt.count(), 1);
    assert.match((await attempt.textContent()) ?? '', /succeeded\s*200/);
    assert.match((await attempt.textContent()) ?? '', /thanks from the receiver/);
    await page.click('button:has-text("Replay")');
    await page.waitForSelector('[role=status]');
    await receiver.waitFor(2);

    await page.click('button:has-text("Rotate secret")');
    const rotated = await page.inputValue('#new-secret');
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, first);
    await shot('webhook');
    await assertFitsPhone();
    await page.goto(url('/dashboard/webhooks'));
    await shot('webhooks');
  });

  it('shows subscribers, audiences and campaigns with counts', async () => {
    await server.runtime.services.subscribers.upsert(server.workspaceId, { email: 'fan@dest.test' });
    await page.goto(url('/dashboard/marketing'));
    assert.match((await page.textContent('dl.facts')) ?? '', /Subscribers\s*1/);
    assert.equal(await page.locator('td', { hasText: 'fan@dest.test' }).count(), 1);
    await shot('marketing');
    await assertFitsPhone();
  });

  it('adds a receiving route and shows received mail with its authentication and a sandboxed preview', async () => {
    await addVerifiedDomain(server, dns, 'inbox.example.test');
    await page.goto(url('/dashboard/receiving'));
    await page.fill('input[name=address]', 'help@inbox.example.test');
    await page.selectOption('select[name=action]', 'store');
    await page.click('form[action="/dashboard/receiving/routes"] button[type=submit]');
    await page.waitForSelector('[role=status]:has-text("Added help@inbox.example.test")');
    assert.equal(await page.locator('tr', { hasText: 'help@inbox.example.test' }).count(), 1);

    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: server.inboundPort!, secure: false, tls: { rejectUnauthorized: false } });
    await transport.sendMail({ from: 'someone@elsewhere.test', to: 'help@inbox.example.test', subject: 'Need <help>', html: '<h1>Please help</h1><script>parent.document.title="pwned"</script>' });
    await page.goto(url('/dashboard/receiving'));
    await page.click('a:has-text("Need <help>")');
    await page.waitForURL(/\/dashboard\/receiving\/[0-9a-f-]{36}$/);
    assert.equal(await page.textContent('h1'), 'Need <help>');
    assert.match((await page.textContent('dl.facts')) ?? '', /SPF none/, 'authentication results shown');
    assert.equal(await page.getAttribute('iframe.preview', 'sandbox'), '');
    assert.equal(await page.frameLocator('iframe.preview').locator('h1').textContent(), 'Please help');
    assert.notEqual(await page.title(), 'pwned', 'scripts in received HTML do not run');
    await shot('received');
    await assertFitsPhone();

    await page.goto(url('/dashboard/receiving'));
    await shot('receiving');
    await assertFitsPhone();
    await page.locator('tr', { hasText: 'help@inbox.example.test' }).locator('button', { hasText: 'Remove' }).click();
    await page.waitForSelector('[role=status]:has-text("Removed help@inbox.example.test")');
    await assert.rejects(transport.sendMail({ from: 'someone@elsewhere.test', to: 'help@inbox.example.test', subject: 'again', text: 'x' }), (err: { responseCode?: number }) => err.responseCode === 550);
  });

  it('lists workflows and their runs, shows a run step by step, cancels a run and stops a workflow', async () => {
    const workspaceId = server.workspaceId;
    const workflows = server.runtime.services.workflows;
    const flow = await workflows.create(workspaceId, {
      name: 'Trial reminder',
      status: 'enabled',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'trial.started' } },
        { key: 'is_team', type: 'condition', config: { type: 'rule', field: 'event.seats', operator: 'gt', value: 1 } },
        { key: 'wait', type: 'delay', config: { duration: '7 days' } },
      ],
      connections: [
        { from: 'start', to: 'is_team' },
        { from: 'is_team', to: 'wait', type: 'condition_met' },
      ],
    });
    for (const [email, seats] of [['team@dest.test', 5], ['solo@dest.test', 1], ['crew@dest.test', 3]] as const) {
      await workflows.sendEvent(workspaceId, { event: 'trial.started', email, payload: { seats }, test: true });
    }
    await eventually(async () => (await workflows.get(workspaceId, flow.id)).runs.running === 2 && (await workflows.get(workspaceId, flow.id)).runs.completed === 1, 15_000, 'two runs waiting, one completed');

    await page.goto(url('/dashboard/workflows'));
    const row = page.locator('tr', { hasText: 'Trial reminder' });
    const rowText = (await row.textContent()) ?? '';
    assert.match(rowText, /enabled\s*trial\.started\s*2\s*1\s*0/, rowText);
    await shot('workflows');
    await assertFitsPhone();
    await row.locator('a').click();
    await page.waitForURL(/\/dashboard\/workflows\/[0-9a-f-]{36}$/);
    assert.equal(await page.locator('td code', { hasText: 'is_team' }).count(), 1);
    await shot('workflow');
    await assertFitsPhone();

    await page.click('a:has-text("solo@dest.test")');
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    assert.match((await page.locator('tr', { hasText: 'is_team' }).textContent()) ?? '', /condition\s*completed[\s\S]*"result":false/);
    await shot('workflow-run');
    await assertFitsPhone();

    await page.goto(url(`/dashboard/workflows/${flow.id}`));
    await page.locator('tr', { hasText: 'team@dest.test' }).locator('button', { hasText: 'Cancel' }).click();
    await page.waitForSelector('[role=status]:has-text("The run for team@dest.test is cancelled")');
    assert.match((await page.locator('tr', { hasText: 'wait' }).textContent()) ?? '', /skipped/);
    await page.goto(url(`/dashboard/workflows/${flow.id}`));
    await page.click('button:has-text("Stop")');
    await page.waitForSelector('[role=status]:has-text("Trial reminder is disabled. 1 run(s) cancelled.")');
    assert.equal((await workflows.get(workspaceId, flow.id)).runs.cancelled, 2);
  });

  it('opens on an overview with server-drawn charts, the domains\' checks and the reputation guard', async () => {
    const domain = await addVerifiedDomain(server, dns, 'live.example.test');
    await server.runtime.services.domains.verify(server.workspaceId, domain.id);
    const key = await server.key();
    // Live mail to the simulator's addresses: counted like any live mail, never leaves the machine.
    const ids: string[] = [];
    for (const to of ['one@simulator.mailsvc.dev', 'two@simulator.mailsvc.dev', 'three@simulator.mailsvc.dev', 'bounced@simulator.mailsvc.dev']) {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', { key, body: { from: 'news@live.example.test', to, subject: 'Live', html: '<p>hi</p>' } });
      assert.equal(res.status, 200, show(res));
      ids.push(res.body.id);
    }
    await eventually(async () => (await Promise.all(ids.map((id) => server.runtime.services.emails.get(server.workspaceId, id)))).every((e) => ['delivered', 'bounced'].includes(e.status)), 15_000, 'live mail answered');
    await server.runtime.services.emailMetrics.rollUp();

    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(url('/dashboard'));
    await page.waitForURL(/\/dashboard\/overview$/);
    assert.equal(await page.textContent('h1'), 'Overview');
    assert.equal(await page.locator('svg.chart').count(), 4, 'two line charts and two bar charts');
    assert.equal(await page.locator('svg.chart polyline').count(), 14, 'seven series per line chart');
    const legend = (await page.locator('ul.legend').first().textContent()) ?? '';
    assert.match(legend, /sent 3/);
    assert.match(legend, /bounced 1/);
    assert.match((await page.textContent('#queue')) ?? '', /held\s*0/);
    const row = page.locator('tr', { hasText: 'live.example.test' });
    assert.match((await row.textContent()) ?? '', /DKIM ok/);
    assert.ok(requests.every((u) => u.startsWith(server.httpUrl)), `nothing loaded from elsewhere: ${requests.filter((u) => !u.startsWith(server.httpUrl)).join(', ')}`);
    await shot('overview');
    await assertFitsPhone();

    // A paused domain shows a Resume button that releases its marketing mail.
    const now = Date.now();
    await server.runtime.store.db
      .insertInto('reputation_states')
      .values({ domain_id: domain.id, workspace_id: server.workspaceId, state: 'paused', accepted: 300, bounces: 40, hard_bounces: 40, complaints: 0, reason: 'hard-bounce rate 11.76% is over 10%', evaluated_at: now, changed_at: now, paused_at: now, resumed_at: null })
      .execute();
    await page.goto(url('/dashboard/overview'));
    assert.match((await row.textContent()) ?? '', /paused/);
    await row.locator('button', { hasText: 'Resume' }).click();
    await page.waitForSelector('[role=status]:has-text("sends marketing mail again")');
    assert.equal((await server.runtime.services.reputation.get(server.workspaceId, domain.id)).state, 'sending');

    await page.goto(url(`/dashboard/domains/${domain.id}`));
    assert.match((await page.textContent('#check-dkim')) ?? '', /ok/);
    assert.match((await page.textContent('#check-spf')) ?? '', /not_published/);
    assert.ok(await page.locator('#check-spf input[value^="v=spf1"]').count(), 'the SPF record to publish, with a copy button');
    await shot('domain-checks');
    await assertFitsPhone();
  });

  it('signs out', async () => {
    await page.click('button:has-text("Sign out")');
    await page.waitForURL(/\/dashboard\/login$/);
    await page.goto(url('/dashboard/keys'));
    assert.match(page.url(), /\/dashboard\/login/);
  });
});
