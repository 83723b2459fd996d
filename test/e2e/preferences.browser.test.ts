import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startShop, type Shop } from '../helpers/shop.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * The preference centre in a real browser with JavaScript switched off (as some mail apps'
 * browsers run), at phone width: a contact opens the link of a delivered broadcast, leaves one
 * topic, and the next broadcasts follow; then leaves everything and comes back. Screenshots go
 * to test-artifacts/preferences/ (git-ignored).
 */

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = `${repoPath('test-artifacts/preferences')}/`;
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent: install it with \`apt-get install -y chromium\``;

describe('the preference centre in Chromium', { skip }, () => {
  let shop: Shop;
  let browser: Browser;
  let page: Page;
  let segment: string;
  const topics: Record<string, string> = {};

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    shop = await startShop();
    await shop.server.runtime.services.workspaces.setBranding(shop.server.workspaceId, { name: 'La Boutique' });
    for (const name of ['Nouveautés', 'Promotions'])
      topics[name] = (await shop.post('/v1/topics', { name, default_subscription: 'opt_in' })).body.id;
    segment = (await shop.post('/v1/segments', { name: 'Clients' })).body.id;
    for (const [email, language] of [
      ['claire@dest.test', 'fr'],
      ['dora@dest.test', 'es'],
    ]) {
      assert.equal(
        (await shop.post('/v1/contacts', { email, properties: { language }, segments: [{ id: segment }] })).status,
        201,
      );
    }
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    page = await (
      await browser.newContext({ javaScriptEnabled: false, viewport: { width: 375, height: 812 } })
    ).newPage();
  });
  after(async () => {
    await browser?.close();
    await shop?.close();
  });

  const broadcast = (topic: string, subject: string) =>
    shop.broadcast({
      from: 'La Boutique <news@shop.example>',
      subject,
      html: '<p>Bonjour</p>',
      segment_id: segment,
      topic_id: topics[topic],
    });
  const fitsPhone = async () => {
    const width = await page.evaluate('document.documentElement.scrollWidth');
    assert.ok(typeof width === 'number' && width <= 375, `${width}px wide at 375px`);
  };

  it('Claire leaves one topic with the plain form, in French, without JavaScript', async () => {
    assert.deepEqual(await broadcast('Nouveautés', 'Nouvelle collection'), ['claire@dest.test', 'dora@dest.test']);
    await page.goto(shop.unsubscribeLink('claire@dest.test'));
    assert.equal(await page.textContent('h1'), 'Préférences d’e-mail');
    assert.equal(await page.textContent('header b'), 'La Boutique');
    await page.screenshot({ path: `${ARTIFACTS}choices.png`, fullPage: true });
    await fitsPhone();
    assert.equal(await page.isChecked(`input[value="${topics['Nouveautés']}"]`), true);
    await page.uncheck(`input[value="${topics['Nouveautés']}"]`);
    await Promise.all([page.waitForURL(/notice=saved$/), page.click('button[value="save"]')]);
    assert.match((await page.textContent('.notice'))!, /Vos choix sont enregistrés/);
    assert.equal(
      await page.isChecked(`input[value="${topics['Nouveautés']}"]`),
      false,
      'the page shows the choice saved',
    );
    assert.equal(await page.isChecked(`input[value="${topics.Promotions}"]`), true);
    await page.screenshot({ path: `${ARTIFACTS}saved.png`, fullPage: true });
  });

  it('the next broadcast to the topic she left skips her; one to the other topic reaches her', async () => {
    assert.deepEqual(await broadcast('Nouveautés', 'Encore du nouveau'), ['dora@dest.test']);
    assert.deepEqual(await broadcast('Promotions', 'Soldes'), ['claire@dest.test', 'dora@dest.test']);
  });

  it('Dora leaves everything with one button, in Spanish, and comes back', async () => {
    await page.goto(shop.unsubscribeLink('dora@dest.test'));
    assert.equal(await page.textContent('h1'), 'Preferencias de correo');
    await page.click('text=Darme de baja de todo');
    assert.equal(await page.textContent('h1'), 'Se ha dado de baja');
    await page.screenshot({ path: `${ARTIFACTS}unsubscribed.png`, fullPage: true });
    assert.deepEqual(await broadcast('Promotions', 'Más soldes'), ['claire@dest.test']);
    await Promise.all([page.waitForURL(/notice=resubscribed$/), page.click('text=Volver a suscribirme')]);
    assert.match((await page.textContent('.notice'))!, /Bienvenido de nuevo/);
    await fitsPhone();
    assert.deepEqual(await broadcast('Promotions', 'Últimas soldes'), ['claire@dest.test', 'dora@dest.test']);
  });
});
