import assert from 'node:assert/strict';
import { rollUpStats } from '../../src/tasks/roll-up-stats.js';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import nodemailer from 'nodemailer';
import type { Browser, Page } from 'playwright-core';
import { eventually } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * The dashboard in a real browser (Debian's Chromium driven by playwright-core), against the
 * real server: what a newcomer does on a first visit. A screenshot of every page is kept in
 * test-artifacts/dashboard/ (git-ignored) for people to look at.
 */

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = `${repoPath('test-artifacts/dashboard')}/`;
const PASSWORD = 'dashboard-e2e-password';
/** Added in the dashboard and never verified: test keys may send from it (the newcomer's path). */
const SENDER = 'shop.example.test';
const skip = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent: install it with \`apt-get install -y chromium\` (.ci/run does when it runs as root)`;

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
    await page.waitForURL(/\/dashboard\/keys$/);
    const secret = await page.inputValue('#new-key-value');
    assert.match(secret, /^sk_live_[A-Za-z0-9]{43}$/);
    assert.ok(await page.isVisible('button[data-copy="new-key-value"]'), 'with a copy button');
    await shot('keys-created');
    await assertFitsPhone();
    // Post/redirect/get: a refresh neither shows the key again nor creates another.
    await page.reload();
    assert.equal(await page.locator('#new-key-value').count(), 0);
    assert.equal(await page.locator('tr', { hasText: 'browser key' }).count(), 1);
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
      assert.equal(
        await page.locator(`#check-dkim input[value="${record.name}"]`).count(),
        1,
        `shows ${record.name} once`,
      );
      assert.equal(
        await page.locator(`#check-dkim input[value="${record.value}"]`).count(),
        1,
        `shows ${record.value} once`,
      );
    }
    assert.ok((await page.locator('button[data-copy]').count()) >= customer.length * 2);
    assert.match((await page.textContent('main')) ?? '', /press “Check DNS now”/, 'the hint names the button there is');
    // Verify asks the test DNS server, which has no records for this domain yet.
    await page.click('button:has-text("Check DNS now")');
    await page.waitForSelector('[role=status]');
    assert.match((await page.textContent('[role=status]')) ?? '', /not verified yet/);
    // After a check, each record still shows once: the checks' records are the records.
    const { dkimHost } = await server.runtime.services.domains.recordsToPublish(server.workspaceId, SENDER);
    for (const record of customer)
      assert.equal(
        await page.locator(`#check-dkim input[value="${record.value}"]`).count(),
        1,
        `${record.name} once after the check`,
      );
    for (const record of dkimHost)
      assert.equal(await page.locator(`input[value="${record.value}"]`).count(), 1, `the key at ${record.name} once`);
    assert.equal(await page.locator('input[value^="v=spf1"]').count(), 1, 'the SPF record once');
    // The operator's records beside the owner's: the DKIM keys under dkim.host.
    assert.equal(await page.locator('#operator input[value^="v=DKIM1"]').count(), dkimHost.length);
    assert.match((await page.textContent('#check-spf h3')) ?? '', /SPF\s*not_published\s*required/);
    assert.match((await page.textContent('#check-mta_sts h3')) ?? '', /optional/);
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
      body: {
        from: `Shop <hello@${SENDER}>`,
        to: 'customer@dest.test',
        subject: 'Your <receipt>',
        html: '<h1>Thanks</h1><script>parent.document.title="pwned"</script>',
      },
    });
    assert.equal(sent.status, 200, show(sent));
    const id = sent.body.id as string;
    await eventually(
      async () => (await server.runtime.services.emails.get(server.workspaceId, id)).status === 'delivered',
      15_000,
      'simulated delivery',
    );

    await page.goto(url('/dashboard/emails?to=customer%40dest'));
    await page.click('a:has-text("Your <receipt>")');
    await page.waitForURL(new RegExp(`/dashboard/emails/${id}$`));
    assert.equal(await page.textContent('h1'), 'Your <receipt>');
    const events = (await page.textContent('#events')) ?? '';
    for (const type of ['email.sent', 'email.delivered'])
      assert.ok(events.includes(type), `timeline has ${type}: ${events}`);
    const body = (await page.textContent('body')) ?? '';
    assert.match(body, /250 2\.0\.0 OK \(simulated\)/, 'the remote reply of the attempt');
    assert.doesNotMatch(body, /250 250/, 'the reply code once');
    assert.doesNotMatch(body, /0 ms, TLS/, 'a simulated attempt claims no time and no TLS');
    assert.match(body, /simulated/);
    assert.match(
      events,
      /^\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s*queued/,
      'the timeline starts with the email, to the millisecond',
    );
    assert.match((await page.textContent('#headers')) ?? '', /Subject: Your <receipt>/, 'headers');
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

  it('shows test mail on the overview while there is no live mail, labelled, in charts drawn at a fixed text size', async () => {
    await rollUpStats(server.runtime.deps);
    await page.goto(url('/dashboard/overview'));
    assert.match(
      (await page.textContent('#test-mail')) ?? '',
      /No live mail in the last 30 days: the charts show test mail/,
    );
    const titles = await page.locator('figcaption.chart-title').allTextContents();
    assert.deepEqual(titles, [
      'Test mail per hour, last 48 hours (UTC)',
      'Test mail per day, last 30 days (UTC)',
      'Delivery rate per mailbox provider',
      'Bounce rate per mailbox provider',
    ]);
    assert.match((await page.locator('ul.legend').first().textContent()) ?? '', /sent 1/, 'the test email is counted');
    const ticks = await page.locator('svg.chart text.tick').allTextContents();
    assert.ok(
      ticks.some((t) => /^\d{1,2} [A-Z][a-z]{2} \d\d:00$/.test(t)),
      `dated hour labels: ${ticks.join(' | ')}`,
    );
    assert.equal(new Set(ticks.filter((t) => /:00$/.test(t))).size, 3, 'three different hours on the 48-hour axis');
    await shot('overview-test-mail');
    await assertFitsPhone();
    // On a desktop screen the labels stay the size of small body text.
    await page.setViewportSize({ width: 1440, height: 900 });
    const sizes = await page.evaluate<number[]>(
      `[...document.querySelectorAll('svg.chart text')].map((t) => t.getBoundingClientRect().height)`,
    );
    assert.ok(
      sizes.length > 0 && sizes.every((h) => h > 8 && h < 18),
      `text heights on a desktop: ${sizes.join(', ')}`,
    );
    await page.screenshot({ path: `${ARTIFACTS}overview-desktop.png`, fullPage: true });
    await page.setViewportSize({ width: 375, height: 812 });
  });

  it('searches the email log by subject, address and id, by date, status and tag, with a From column', async () => {
    const key = await server.key({ test: true });
    const send = async (body: Record<string, unknown>) => {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: `Billing <billing@${SENDER}>`, text: 'x', ...body },
      });
      assert.equal(res.status, 200, show(res));
      return res.body.id as string;
    };
    const invoice = await send({
      to: 'payer@dest.test',
      subject: 'Invoice 42',
      tags: [{ name: 'plan', value: 'pro' }],
      metadata: { order: 42 },
    });
    await send({ to: 'reader@dest.test', subject: 'Newsletter' });
    const filter = async (fields: Record<string, string>) => {
      await page.goto(url('/dashboard/emails'));
      for (const [name, value] of Object.entries(fields)) {
        if (name === 'status') await page.selectOption('select[name=status]', value);
        else await page.fill(`input[name=${name}]`, value);
      }
      await page.click('form[role=search] button[type=submit]');
      await page.waitForURL(/\/dashboard\/emails\?/);
      return page.locator('tbody tr td:first-child a').allTextContents();
    };
    assert.deepEqual(await filter({ q: 'INVOICE' }), ['Invoice 42']);
    assert.deepEqual(await filter({ q: 'reader@dest' }), ['Newsletter']);
    assert.deepEqual(await filter({ q: invoice }), ['Invoice 42']);
    assert.deepEqual(await filter({ q: 'billing@' }), ['Newsletter', 'Invoice 42'], 'the sender matches too');
    assert.deepEqual(await filter({ tag: 'plan' }), ['Invoice 42']);
    assert.deepEqual(await filter({ tag: 'plan:pro', q: 'invoice' }), ['Invoice 42']);
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    assert.ok((await filter({ q: 'invoice', from: today, until: today })).includes('Invoice 42'), 'today, inclusive');
    assert.deepEqual(await filter({ q: 'invoice', from: tomorrow }), []);
    assert.match((await page.textContent('main')) ?? '', /No emails match/);
    assert.deepEqual(await filter({ q: 'invoice', status: 'cancelled' }), []);
    assert.equal(await page.inputValue('input[name=q]'), 'invoice', 'the filters stay in the form');
    await page.goto(url('/dashboard/emails?q=invoice'));
    assert.deepEqual(await page.locator('thead th').allTextContents(), [
      'Subject',
      'From',
      'To',
      'Status',
      'Created (UTC)',
    ]);
    assert.match(
      (await page.locator('tbody tr').first().textContent()) ?? '',
      /Billing"? <billing@shop\.example\.test>/,
    );
    await shot('emails-search');
    await assertFitsPhone();
  });

  it('creates a template, shows it with a preview, and publishes it', async () => {
    await page.goto(url('/dashboard/templates'));
    assert.equal(await page.textContent('h1'), 'Templates');
    await page.fill('input[name=name]', 'Welcome');
    await page.fill('input[name=alias]', 'welcome-email');
    await page.fill('input[name=subject]', 'Welcome, {{first_name}}');
    await page.fill('textarea[name=html]', '<h1>Welcome aboard</h1><p>{{first_name}}</p>');
    await page.click('form[action="/dashboard/templates"] button[type=submit]');
    await page.waitForURL(/\/dashboard\/templates\/[0-9a-f-]{36}$/);
    assert.equal(await page.textContent('h1'), 'Welcome');
    assert.match(
      (await page.textContent('dl.facts')) ?? '',
      /draft[\s\S]*welcome-email[\s\S]*Welcome, \{\{first_name\}\}/,
    );
    assert.equal(await page.frameLocator('iframe.preview.desktop').locator('h1').textContent(), 'Welcome aboard');
    await shot('template');
    await assertFitsPhone();
    await page.click('button:has-text("Publish")');
    await page.waitForSelector('[role=status]:has-text("is published")');
    assert.match((await page.textContent('dl.facts')) ?? '', /published/);
    await page.goto(url('/dashboard/templates'));
    assert.match(
      (await page.locator('tr', { hasText: 'welcome-email' }).textContent()) ?? '',
      /Welcome[\s\S]*published/,
    );
    await shot('templates');
    await assertFitsPhone();
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

  it('keeps a refused webhook URL in the form, shows a new secret once, sends a test event and shows its payload', async () => {
    await page.goto(url('/dashboard/webhooks'));
    await page.fill('input[name=url]', 'ftp://files.example.test/hooks');
    await page.fill('input[name=events]', 'email.delivered');
    await page.click('form[action="/dashboard/webhooks"] button[type=submit]');
    assert.equal(await page.textContent('h1'), 'Webhooks', 'the same page, not an error page');
    assert.match((await page.textContent('[role=alert]')) ?? '', /url: must be an https:\/\/ URL/);
    assert.equal(await page.inputValue('input[name=url]'), 'ftp://files.example.test/hooks', 'the URL typed is kept');
    assert.equal(await page.inputValue('input[name=events]'), 'email.delivered');

    receiver.reply(() => ({ status: 200, body: 'thanks from the receiver' }));
    await page.fill('input[name=url]', `${receiver.url}/hooks`);
    await page.click('form[action="/dashboard/webhooks"] button[type=submit]');
    await page.waitForURL(/\/dashboard\/webhooks\/[0-9a-f-]{36}$/);
    const first = await page.inputValue('#new-secret-value');
    assert.match(first, /^whsec_/);
    const note = (await page.textContent('#new-secret')) ?? '';
    assert.match(note, /shown only this once/);
    assert.doesNotMatch(note, /previous secret/, 'a new endpoint has no previous secret');
    const detail = page.url();
    await page.reload();
    assert.equal(await page.locator('#new-secret-value').count(), 0, 'a refresh shows it no more');
    assert.equal(
      (await server.runtime.services.webhooks.list(server.workspaceId, { limit: 10, offset: 0 })).total,
      1,
      'and registers nothing twice',
    );

    await page.selectOption('select[name=type]', 'email.delivered');
    await page.click('button:has-text("Send test event")');
    await page.waitForSelector('[role=status]:has-text("Test event email.delivered sent")');
    const [test] = await receiver.waitFor(1);
    assert.equal(test!.json.type, 'email.delivered');
    assert.equal(test!.json.data.to[0], 'delivered@resend.dev');
    await eventually(
      async () => {
        await page.goto(detail);
        return (await page.locator('tr.delivery', { hasText: 'succeeded' }).count()) === 1;
      },
      15_000,
      'the test delivery shown as succeeded',
    );
    await page.click('tr.delivery a:has-text("email.delivered")');
    await page.waitForURL(/\/deliveries\/msg_/);
    const payload = JSON.parse((await page.textContent('pre.json')) ?? '{}');
    assert.equal(payload.id, test!.json.id, 'the payload shown is the body that was sent');
    assert.equal(payload.type, 'email.delivered');
    assert.match(
      (await page.locator('tr.attempt').textContent()) ?? '',
      /succeeded\s*200[\s\S]*thanks from the receiver/,
    );
    await shot('webhook-delivery');
    await assertFitsPhone();
  });

  it("shows a webhook's deliveries with the response, replays one, rotates the secret, disables, enables and deletes", async () => {
    const hooks = await server.runtime.services.webhooks.list(server.workspaceId, { limit: 10, offset: 0 });
    const hookId = hooks.items[0]!.id;
    const detail = url(`/dashboard/webhooks/${hookId}`);
    const key = await server.key({ test: true });
    const sent = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: `hello@${SENDER}`, to: 'hooked@dest.test', subject: 'Hooked', text: 'hi' },
    });
    assert.equal(sent.status, 200, show(sent));
    await receiver.waitFor(1, (r) => r.json?.data?.email_id === sent.body.id);
    await eventually(
      async () => {
        await page.goto(detail);
        return (await page.locator('tr.delivery', { hasText: 'succeeded' }).count()) === 2;
      },
      15_000,
      'the delivery shown as succeeded',
    );
    // Under each delivery, its attempts: outcome, HTTP status and the response.
    assert.equal(await page.locator('tr.attempt').count(), 2);
    assert.match(
      (await page.locator('tr.attempt').first().textContent()) ?? '',
      /succeeded\s*200[\s\S]*thanks from the receiver/,
    );
    const before = receiver.received.length;
    await page.locator('tr.delivery').first().locator('button:has-text("Replay")').click();
    await page.waitForSelector('[role=status]:has-text("queued again")');
    await receiver.waitFor(before + 1);

    await page.click('button:has-text("Rotate secret")');
    await page.waitForURL(detail);
    const rotated = await page.inputValue('#new-secret-value');
    assert.match(rotated, /^whsec_/);
    assert.match((await page.textContent('#new-secret')) ?? '', /previous secret keeps signing for 24 hours/);
    await shot('webhook');
    await assertFitsPhone();

    await page.click('button:has-text("Disable")');
    await page.waitForSelector('[role=status]:has-text("is disabled")');
    assert.match((await page.textContent('dl.facts')) ?? '', /disabled \(manual\)/);
    assert.equal(
      await page.locator('button:has-text("Send test event")').count(),
      0,
      'no test event to a disabled endpoint',
    );
    await page.click('button:has-text("Enable")');
    await page.waitForSelector('[role=status]:has-text("is enabled")');

    const spare = await server.runtime.services.webhooks.register(server.workspaceId, 'v1', {
      url: `${receiver.url}/spare`,
      events: ['*'],
    });
    await page.goto(url(`/dashboard/webhooks/${spare.webhook.id}`));
    await page.click('button:has-text("Delete")');
    await page.waitForURL(/\/dashboard\/webhooks$/);
    assert.match((await page.textContent('[role=status]')) ?? '', /is deleted/);
    assert.equal(await page.locator('td', { hasText: '/spare' }).count(), 0);
    assert.equal(await page.locator('td', { hasText: '/hooks' }).count(), 1);
    await shot('webhooks');
  });

  it('adds a subscriber, shows its page with counts, creates a campaign and shows its counts', async () => {
    await server.runtime.services.subscribers.upsert(server.workspaceId, { email: 'fan@dest.test' });
    await page.goto(url('/dashboard/marketing'));
    await page.fill('form[action="/dashboard/subscribers"] input[name=email]', 'Fan2@Dest.test');
    await page.fill('form[action="/dashboard/subscribers"] input[name=first_name]', 'Ada');
    await page.fill('form[action="/dashboard/subscribers"] input[name=tags]', 'beta, news');
    await page.click('form[action="/dashboard/subscribers"] button[type=submit]');
    await page.waitForURL(/\/dashboard\/subscribers\/[0-9a-f-]{36}$/);
    const subscriberPage = page.url();
    assert.match((await page.textContent('h1')) ?? '', /fan2@dest\.test/i);
    assert.match((await page.textContent('dl.facts')) ?? '', /subscribed[\s\S]*Ada[\s\S]*beta, news/);
    assert.match((await page.textContent('#counts')) ?? '', /delivered\s*0/);
    await shot('subscriber');
    await assertFitsPhone();

    await page.goto(url('/dashboard/marketing'));
    await page.click('a:has-text("New campaign")');
    await page.fill('input[name=name]', 'Browser launch');
    await page.fill('input[name=from_name]', 'Shop');
    await page.fill('input[name=from_email]', `news@${SENDER}`);
    await page.fill('input[name=subject]', 'We launched');
    await page.fill('textarea[name=html]', '<p>Hello {{first_name}}</p>');
    // Live needs a verified domain: refused, with everything typed kept.
    await page.click('button:has-text("Send now")');
    assert.equal(await page.textContent('h1'), 'New campaign');
    assert.ok(await page.locator('[role=alert]').count(), 'the refusal is shown');
    assert.equal(await page.inputValue('input[name=subject]'), 'We launched');
    await page.check('input[name=test]');
    await page.click('button:has-text("Send now")');
    await page.waitForURL(/\/dashboard\/campaigns\/[0-9a-f-]{36}$/);
    assert.equal(await page.textContent('h1'), 'Browser launch');
    const campaignPage = page.url();
    await eventually(
      async () => {
        await page.goto(campaignPage);
        return /delivered\s*2/.test((await page.textContent('#counts')) ?? '');
      },
      20_000,
      'both subscribers delivered (simulated)',
    );
    assert.match((await page.textContent('dl.facts')) ?? '', /sent|sending/);
    assert.equal(await page.locator('tbody tr').count(), 2, 'its two messages');
    await shot('campaign');
    await assertFitsPhone();

    await page.goto(url('/dashboard/marketing'));
    assert.match(
      (await page.locator('tr', { hasText: 'Browser launch' }).locator('td.counts').textContent()) ?? '',
      /2 delivered/,
      'the Counts column is filled',
    );
    assert.match((await page.textContent('dl.facts')) ?? '', /Subscribers\s*2/);
    await shot('marketing');
    await assertFitsPhone();
    await page.goto(subscriberPage);
    assert.match(
      (await page.textContent('#counts')) ?? '',
      /delivered\s*1/,
      'the campaign message counted on the subscriber',
    );
    assert.equal(await page.locator('tbody tr a', { hasText: 'We launched' }).count(), 1);
  });

  it("shows an email's tags, metadata, next retry, campaign, workflow run and webhook deliveries, and a cancelled schedule", async () => {
    const ws = server.workspaceId;
    const key = await server.key({ test: true });
    const email = async (body: Record<string, unknown>) => {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: `hello@${SENDER}`, text: 'x', subject: 'Detail', ...body },
      });
      assert.equal(res.status, 200, show(res));
      return res.body.id as string;
    };
    // Tags and metadata, and the webhook delivery of its email.delivered.
    const tagged = await email({
      to: 'tagged@dest.test',
      tags: [{ name: 'plan', value: 'pro' }],
      metadata: { order: 42 },
    });
    await eventually(
      async () =>
        (await server.runtime.services.webhooks.deliveriesOfEmail(ws, tagged)).some((d) => d.status === 'succeeded'),
      15_000,
      'its webhook delivered',
    );
    await page.goto(url(`/dashboard/emails/${tagged}`));
    assert.match((await page.textContent('dl.facts')) ?? '', /Tags\s*plan:pro/);
    assert.match((await page.textContent('pre.json')) ?? '', /"order": 42/);
    await page.click(`a[href^="/dashboard/webhooks/"][href*="/deliveries/"]`);
    await page.waitForURL(/\/deliveries\/msg_/);
    assert.equal(
      JSON.parse((await page.textContent('pre.json')) ?? '{}').data.email_id,
      tagged,
      'from the email to the payload its webhook got',
    );

    // A deferred recipient shows when it is retried.
    const delayed = await email({ to: 'delayed@simulator.mailsvc.dev' });
    await eventually(
      async () => (await server.runtime.services.emails.get(ws, delayed)).status === 'deferred',
      15_000,
      'deferred',
    );
    await page.goto(url(`/dashboard/emails/${delayed}`));
    assert.match(
      (await page.locator('tr', { hasText: 'delayed@simulator.mailsvc.dev' }).first().textContent()) ?? '',
      /deferred\s*1\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/,
      'the next retry',
    );

    // A campaign's message links to its campaign.
    const fromCampaign = await server.runtime.store.db
      .selectFrom('emails')
      .select(['id', 'campaign_id'])
      .where('campaign_id', 'is not', null)
      .executeTakeFirstOrThrow();
    await page.goto(url(`/dashboard/emails/${fromCampaign.id}`));
    await page.click('dd a[href^="/dashboard/campaigns/"]');
    await page.waitForURL(new RegExp(`/dashboard/campaigns/${fromCampaign.campaign_id}$`));

    // A workflow's message links to its run.
    const template = await server.runtime.services.templates.get(ws, 'welcome-email');
    const flow = await server.runtime.services.workflows.create(ws, {
      name: 'Welcome flow',
      status: 'enabled',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'signed.up' } },
        { key: 'welcome', type: 'send_email', config: { template: { id: template.alias! }, from: `hello@${SENDER}` } },
      ],
      connections: [{ from: 'start', to: 'welcome' }],
    });
    await server.runtime.services.workflows.sendEvent(ws, {
      event: 'signed.up',
      email: 'newbie@dest.test',
      payload: {},
      test: true,
    });
    const sentByFlow = await eventually(
      async () =>
        (
          await server.runtime.store.db
            .selectFrom('emails')
            .select('id')
            .where('intake', '=', 'workflow')
            .executeTakeFirst()
        )?.id,
      15_000,
      'the workflow email',
    );
    await page.goto(url(`/dashboard/emails/${sentByFlow}`));
    await page.click('dd a[href*="/runs/"]');
    await page.waitForURL(new RegExp(`/dashboard/workflows/${flow.id}/runs/[0-9a-f-]{36}$`));
    assert.match((await page.textContent('h1')) ?? '', /Run for newbie@dest\.test/);

    // A scheduled email, cancelled from its page: the timeline says so.
    const scheduled = await email({
      to: 'later@dest.test',
      scheduled_at: new Date(Date.now() + 3600_000).toISOString(),
    });
    await page.goto(url(`/dashboard/emails/${scheduled}`));
    await page.click('button:has-text("Cancel the scheduled send")');
    await page.waitForSelector('[role=status]:has-text("Cancelled")');
    const timeline = (await page.textContent('#events')) ?? '';
    assert.match(timeline, /scheduled[\s\S]*cancelled/);
    assert.doesNotMatch((await page.textContent('main')) ?? '', /No events yet/);
    await shot('email-cancelled');
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

    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.inboundPort!,
      secure: false,
      tls: { rejectUnauthorized: false },
    });
    await transport.sendMail({
      from: 'someone@elsewhere.test',
      to: 'help@inbox.example.test',
      subject: 'Need <help>',
      html: '<h1>Please help</h1><script>parent.document.title="pwned"</script>',
    });
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
    await assert.rejects(
      transport.sendMail({
        from: 'someone@elsewhere.test',
        to: 'help@inbox.example.test',
        subject: 'again',
        text: 'x',
      }),
      (err: { responseCode?: number }) => err.responseCode === 550,
    );
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
    for (const [email, seats] of [
      ['team@dest.test', 5],
      ['solo@dest.test', 1],
      ['crew@dest.test', 3],
    ] as const) {
      await workflows.sendEvent(workspaceId, { event: 'trial.started', email, payload: { seats }, test: true });
    }
    await eventually(
      async () =>
        (await workflows.get(workspaceId, flow.id)).runs.running === 2 &&
        (await workflows.get(workspaceId, flow.id)).runs.completed === 1,
      15_000,
      'two runs waiting, one completed',
    );

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
    assert.match(
      (await page.locator('tr', { hasText: 'is_team' }).textContent()) ?? '',
      /condition\s*completed[\s\S]*"result":false/,
    );
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

  it("opens on an overview with server-drawn charts, the domains' checks and the reputation guard", async () => {
    const domain = await addVerifiedDomain(server, dns, 'live.example.test');
    await server.runtime.services.domains.verify(server.workspaceId, domain.id);
    const key = await server.key();
    // Live mail to the simulator's addresses: counted like any live mail, never leaves the machine.
    const ids: string[] = [];
    for (const to of [
      'one@simulator.mailsvc.dev',
      'two@simulator.mailsvc.dev',
      'three@simulator.mailsvc.dev',
      'bounced@simulator.mailsvc.dev',
    ]) {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: 'news@live.example.test', to, subject: 'Live', html: '<p>hi</p>' },
      });
      assert.equal(res.status, 200, show(res));
      ids.push(res.body.id);
    }
    await eventually(
      async () =>
        (await Promise.all(ids.map((id) => server.runtime.services.emails.get(server.workspaceId, id)))).every((e) =>
          ['delivered', 'bounced'].includes(e.status),
        ),
      15_000,
      'live mail answered',
    );
    await rollUpStats(server.runtime.deps);

    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(url('/dashboard'));
    await page.waitForURL(/\/dashboard\/overview$/);
    assert.equal(await page.textContent('h1'), 'Overview');
    assert.equal(await page.locator('svg.chart').count(), 2, 'two line charts');
    assert.equal(await page.locator('table.bars').count(), 2, 'and two panels of bars, each titled');
    assert.equal(await page.locator('svg.chart polyline').count(), 14, 'seven series per line chart');
    assert.equal(await page.locator('#test-mail').count(), 0, 'live mail now: no test-mail note');
    assert.match((await page.locator('figcaption.chart-title').first().textContent()) ?? '', /^Mail per hour/);
    const legend = (await page.locator('ul.legend').first().textContent()) ?? '';
    assert.match(legend, /sent 3/);
    assert.match(legend, /bounced 1/);
    assert.match((await page.textContent('#queue')) ?? '', /held\s*0/);
    const row = page.locator('tr', { hasText: 'live.example.test' });
    assert.match((await row.textContent()) ?? '', /DKIM ok/);
    assert.ok(
      requests.every((u) => u.startsWith(server.httpUrl)),
      `nothing loaded from elsewhere: ${requests.filter((u) => !u.startsWith(server.httpUrl)).join(', ')}`,
    );
    await shot('overview');
    await assertFitsPhone();

    // A paused domain shows a Resume button that releases its marketing mail.
    const now = Date.now();
    // Written over whatever the guard's own evaluation recorded meanwhile (on PostgreSQL it may already have run).
    const paused = {
      state: 'paused' as const,
      accepted: 300,
      bounces: 40,
      hard_bounces: 40,
      complaints: 0,
      reason: 'hard-bounce rate 11.76% is over 10%',
      evaluated_at: now,
      changed_at: now,
      paused_at: now,
      resumed_at: null,
    };
    await server.runtime.store.db
      .insertInto('reputation_states')
      .values({ domain_id: domain.id, workspace_id: server.workspaceId, ...paused })
      .onConflict((oc) => oc.column('domain_id').doUpdateSet(paused))
      .execute();
    await page.goto(url('/dashboard/overview'));
    assert.match((await row.textContent()) ?? '', /paused/);
    await row.locator('button', { hasText: 'Resume' }).click();
    await page.waitForSelector('[role=status]:has-text("sends marketing mail again")');
    assert.equal((await server.runtime.services.reputation.get(server.workspaceId, domain.id)).state, 'sending');

    await page.goto(url(`/dashboard/domains/${domain.id}`));
    assert.match((await page.textContent('#check-dkim')) ?? '', /ok/);
    assert.match((await page.textContent('#check-spf')) ?? '', /not_published/);
    assert.equal(
      await page.locator('#check-spf input[value^="v=spf1"]').count(),
      1,
      'the SPF record to publish, once, with a copy button',
    );
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
