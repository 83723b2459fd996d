import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { request } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * The template studio in a real browser (Debian's Chromium through playwright-core): the
 * preview renders with sample variables at desktop and phone widths, a client-check finding
 * is shown beside its line. Screenshots go to test-artifacts/dashboard/ (git-ignored).
 */

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = `${repoPath('test-artifacts/dashboard')}/`;
const PASSWORD = 'studio-e2e-password';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install it with \`apt-get install -y chromium\``;

const HTML = `<html><head><style>
.row { display: flex; }
</style></head><body>
<div class="row"><h1>Hello {{name}}</h1><img src="https://cdn.example/logo.png"></div>
</body></html>`;

describe('the template studio in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let id: string;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    server = await startTestServer({ dashboard: { password: PASSWORD } });
    const key = await server.key();
    const created = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: {
        name: 'Studio',
        subject: 'Hi {{name}}',
        html: HTML,
        variables: [{ key: 'name', type: 'string', sample_value: 'Ada' }],
      },
    });
    id = created.body.id;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.httpUrl}/dashboard/login`);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/dashboard\/overview$/);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('renders the preview with the sample, then with a value given, at desktop and phone widths', async () => {
    await page.goto(`${server.httpUrl}/dashboard/templates/${id}`);
    assert.equal(await page.frameLocator('iframe.preview.desktop').locator('h1').textContent(), 'Hello Ada');
    await page.fill('input[name="v.name"]', 'Zed');
    await page.click('form[method=get] button[type=submit]');
    await page.waitForURL(/v\.name=Zed/);
    assert.equal(await page.frameLocator('iframe.preview.desktop').locator('h1').textContent(), 'Hello Zed');
    assert.equal(await page.frameLocator('iframe.preview.mobile').locator('h1').textContent(), 'Hello Zed');
    const widths = await page.$$eval('iframe.preview', (frames) =>
      frames.map((f) => Math.round(f.getBoundingClientRect().width)),
    );
    assert.equal(widths[1], 375, 'the phone preview is 375 px wide');
    assert.ok(widths[0]! > 500, 'the desktop preview is wide');
    await page.screenshot({ path: `${ARTIFACTS}studio-desktop.png`, fullPage: true });
    await page.setViewportSize({ width: 375, height: 812 });
    await page.screenshot({ path: `${ARTIFACTS}studio-phone.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('shows the findings beside the lines they point at', async () => {
    await page.goto(`${server.httpUrl}/dashboard/templates/${id}`);
    const findings = await page.locator('ul.findings li').allTextContents();
    assert.ok(
      findings.some((f) => /display:flex: not supported by .*Outlook \(Windows\)/.test(f)),
      findings.join('\n'),
    );
    assert.ok(findings.some((f) => /no alt text/.test(f)));
    assert.match((await page.locator('#line-2').textContent()) ?? '', /display: flex[\s\S]*display:flex/);
    assert.match((await page.locator('#line-4').textContent()) ?? '', /no alt text/);
  });

  it('the preview frame runs no script and loads no remote image unless asked', async () => {
    const plain = await page.request.get(`${server.httpUrl}/dashboard/templates/${id}/preview`);
    const csp = plain.headers()['content-security-policy'] ?? '';
    assert.match(csp, /^sandbox; default-src 'none'/);
    assert.doesNotMatch(csp, /script-src|https:/);
    const remote = await page.request.get(`${server.httpUrl}/dashboard/templates/${id}/preview?remote=1`);
    assert.match(remote.headers()['content-security-policy'] ?? '', /img-src data: https:/);
    assert.equal(await page.locator('iframe.preview.desktop').getAttribute('sandbox'), '');
  });
});
