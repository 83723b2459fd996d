import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { generateSync } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * A new team member in a real browser (Debian's Chromium driven by playwright-core): the
 * invitation arrives by email at a loopback MX, its link sets a password, the Account page
 * enrols an authenticator (the test reads the key shown as text and computes the code as an
 * app would), and signing in again takes the password and then a code, or a recovery code once.
 * The server runs on a clock the test moves, so codes never straddle a step by chance.
 * Screenshots in test-artifacts/team-sign-in/ (git-ignored).
 */

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = `${repoPath('test-artifacts/team-sign-in')}/`;
const PUBLIC = 'http://mail.team.example';
const EMAIL = 'alex@dest.test';
const PASSWORD = 'alex chose this password';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install it with \`apt-get install -y chromium\``;

describe('a team member signs in with two factors, in Chromium', { skip }, () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const clock = manualClock(Math.floor(Date.now() / 30_000) * 30_000 + 5_000);
  let secret = '';
  let recovery: string[] = [];

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dns = await startDnsServer();
    mx = await startMxServer();
    server = await startTestServer(
      {
        delivery: { dnsServers: [dns.server], port: mx.port, pollInterval: 50, signingThreads: 0 },
        http: { publicUrl: PUBLIC },
      },
      { clock },
    );
    await addVerifiedDomain(server, dns, 'team.example');
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    await server.runtime.services.users.create({
      email: 'owner@team.example',
      password: 'the owner password',
      workspaceId: server.workspaceId,
      role: 'owner',
    });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await mx?.close();
    await dns?.close();
  });

  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
  const code = () => generateSync({ secret, epoch: Math.floor(clock.now() / 1000) });
  const signOut = async () => {
    await Promise.all([page.waitForURL(/\/dashboard\/login$/), page.click('header button:has-text("Sign out")')]);
  };
  const password = async () => {
    await page.fill('input[name=email]', EMAIL);
    await page.fill('input[name=password]', PASSWORD);
    await Promise.all([page.waitForURL(/\/dashboard\/login\/two-factor/), page.click('button[type=submit]')]);
  };

  it('accepts the invitation that arrived by email and chooses a password', async () => {
    const invited = await server.runtime.services.users.invite({
      email: EMAIL,
      workspaceId: server.workspaceId,
      role: 'developer',
    });
    assert.equal(invited.mailed, true, invited.mail_error ?? '');
    const [message] = await mx.waitFor(1, 20_000);
    const text = (await simpleParser(message!.raw)).text ?? '';
    const link = /http\S+\/dashboard\/invite\/[A-Za-z0-9_-]{43}/.exec(text)?.[0] ?? assert.fail(text);
    await page.goto(link.replace(PUBLIC, server.httpUrl));
    assert.match((await page.textContent('.card'))!, /alex@dest\.test, role developer/);
    await page.fill('input[name=password]', PASSWORD);
    await page.fill('input[name=confirm]', PASSWORD);
    await shot('invitation');
    await Promise.all([page.waitForURL(/\/dashboard\/overview$/), page.click('button[type=submit]')]);
  });

  it('enrols an authenticator from the Account page: QR code, key as text, confirmed by a code; recovery codes shown once', async () => {
    await Promise.all([page.waitForURL(/\/dashboard\/account$/), page.click('header a:has-text("Account")')]);
    assert.match((await page.textContent('#two-factor-status'))!, /off/);
    await Promise.all([
      page.waitForURL(/\/dashboard\/account\/two-factor$/),
      page.click('text=Set up two-factor sign-in'),
    ]);
    assert.equal(await page.isVisible('.qr svg'), true, 'the QR code is drawn');
    secret = (await page.textContent('#totp-secret'))!.trim();
    assert.match(secret, /^[A-Z2-7]{16,}$/);
    await shot('enrol');
    await page.fill('input[name=code]', code());
    await Promise.all([page.waitForURL(/\/dashboard\/account$/), page.click('button:has-text("Confirm")')]);
    recovery = (await page.locator('#recovery-codes code').allTextContents()).map((c) => c.trim());
    assert.equal(recovery.length, 10);
    assert.match((await page.textContent('#two-factor-status'))!, /on.*10 of 10 recovery codes left/s);
    await shot('recovery-codes');
    await page.reload();
    assert.equal(await page.locator('#recovery-codes').count(), 0, 'shown only once');
  });

  it('signs out, and signs in again with the password and then a code', async () => {
    await signOut();
    clock.advance(30_000);
    await password();
    await shot('code');
    await page.fill('input[name=code]', code());
    await Promise.all([page.waitForURL(/\/dashboard$|\/dashboard\/overview$/), page.click('button[type=submit]')]);
    assert.equal(await page.textContent('h1'), 'Overview');
  });

  it('a recovery code signs in once', async () => {
    await signOut();
    await password();
    await page.fill('input[name=code]', recovery[0]!);
    await Promise.all([page.waitForURL(/\/dashboard\/overview$/), page.click('button[type=submit]')]);
    await page.goto(`${server.httpUrl}/dashboard/account`);
    assert.match((await page.textContent('#two-factor-status'))!, /9 of 10 recovery codes left/);
    await signOut();
    await password();
    await page.fill('input[name=code]', recovery[0]!);
    await page.click('button[type=submit]');
    assert.match((await page.textContent('[role=alert]'))!, /That code is not right/);
    assert.match(page.url(), /\/dashboard\/login\/two-factor$/);
    await shot('recovery-code-used');
  });
});
