import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCliProcess } from '../helpers/cli.js';
import { request, tampered } from '../helpers/http.js';
import { startShop, type Shop } from '../helpers/shop.js';

/**
 * The preference centre behind the unsubscribe link of real delivered broadcasts, spoken to
 * as browsers and mailbox providers do: the contact's topics in its language, changed with
 * the page's form (and refused without it, from another site, or out of date), the one-click
 * unsubscribe unchanged, subscribing again, and the next broadcasts honouring the choices.
 */
describe('the preference centre', () => {
  let shop: Shop;
  let server: Shop['server'];
  let mx: Shop['mx'];
  let key: string;
  let clock: Shop['clock'];
  const topics: Record<string, string> = {};

  before(async () => {
    shop = await startShop();
    ({ server, mx, key, clock } = shop);
    for (const [name, description, default_subscription] of [
      ['Product news', 'What we ship', 'opt_in'],
      ['Deals', 'Sales & <offers>', 'opt_in'],
      ['Events', null, 'opt_out'],
    ] as const) {
      topics[name] = (await shop.post('/v1/topics', { name, description, default_subscription })).body.id;
    }
  });
  after(async () => {
    await shop?.close();
  });

  const broadcast = (segmentId: string, topic: string, subject: string) =>
    shop.broadcast({ subject, segment_id: segmentId, topic_id: topics[topic] });
  const post = (path: string, body: unknown) => shop.post(path, body);
  const tokenOf = (to: string) => shop.unsubscribeLink(to).replace(/^.*\/u\//, '');

  let segment: string;
  let link: string;
  let token: string;
  const page = (path = '', headers: Record<string, string> = {}) =>
    fetch(`${server.httpUrl}/u/${token}${path}`, { headers, redirect: 'manual' });
  const formOf = (html: string) => /name="form" value="([^"]+)"/.exec(html)![1]!;
  const save = (form: URLSearchParams, headers: Record<string, string> = {}) =>
    fetch(`${server.httpUrl}/u/${token}/preferences`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: form,
      redirect: 'manual',
    });

  it('every message of a broadcast carries the link to the page', async () => {
    const seg = await post('/v1/segments', { name: 'Customers' });
    segment = seg.body.id;
    await post('/v1/contacts', {
      email: 'anna@dest.test',
      first_name: 'Anna',
      properties: { language: 'de-AT' },
      segments: [{ id: segment }],
    });
    await post('/v1/contacts', { email: 'ben@dest.test', segments: [{ id: segment }] });
    assert.deepEqual(await broadcast(segment, 'Product news', 'First news'), ['anna@dest.test', 'ben@dest.test']);
    link = shop.unsubscribeLink('anna@dest.test');
    assert.match(link, new RegExp(`^${server.httpUrl}/u/[\\w.-]+$`), 'http.publicUrl/u/<token>');
    token = tokenOf('anna@dest.test');
  });

  it("shows the contact's topics with their state, in the contact's language, with the workspace's name and logo", async () => {
    await server.runtime.services.workspaces.setBranding(server.workspaceId, {
      name: 'Schuhhaus Anna & Co',
      logoUrl: 'https://cdn.shop.example/logo.png',
    });
    const res = await page('', { 'accept-language': 'fr' });
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy')!;
    for (const directive of ["default-src 'none'", "form-action 'self'", "frame-ancestors 'none'"])
      assert.ok(csp.includes(directive), csp);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.match(res.headers.get('cache-control')!, /no-store/);
    const html = await res.text();
    assert.match(html, /<html lang="de">/, 'the contact’s own language beats the browser’s');
    assert.match(html, /<h1>E-Mail-Einstellungen<\/h1>/);
    assert.match(html, /<img src="https:\/\/cdn\.shop\.example\/logo\.png" alt="Schuhhaus Anna &amp; Co">/);
    assert.ok(html.includes('Wählen Sie, was Schuhhaus Anna &amp; Co an anna@dest.test sendet.'));
    assert.ok(html.includes(`value="${topics['Product news']}" checked>`));
    assert.ok(html.includes(`value="${topics.Deals}" checked>`));
    assert.ok(html.includes(`value="${topics.Events}">`), 'an opt-out topic the contact never chose is unticked');
    assert.ok(html.includes('Sales &amp; &lt;offers&gt;'), 'escaped');
    assert.ok(!/<script/i.test(html), 'no script');
    assert.ok(
      html.includes(
        `<form method="post" action="${token}"><input type="hidden" name="List-Unsubscribe" value="One-Click">`,
      ),
      'unsubscribe from everything is the one-click POST',
    );
  });

  it('picks the language: ?lang=, the contact, the browser by preference, else English', async () => {
    const benToken = tokenOf('ben@dest.test');
    const lang = async (t: string, query: string, acceptLanguage?: string) =>
      /<html lang="(\w+)">/.exec(
        await (
          await fetch(`${server.httpUrl}/u/${t}${query}`, {
            headers: acceptLanguage ? { 'accept-language': acceptLanguage } : {},
          })
        ).text(),
      )![1];
    assert.equal(await lang(benToken, '', 'es-MX,es;q=0.9,en;q=0.8'), 'es');
    assert.equal(await lang(benToken, '', 'it;q=1, fr;q=0.7, de;q=0.8'), 'de');
    assert.equal(await lang(benToken, '', 'it, pt'), 'en');
    assert.equal(await lang(benToken, '', 'fr;q=0, es'), 'es');
    assert.equal(await lang(benToken, ''), 'en');
    assert.equal(await lang(benToken, '?lang=fr', 'es'), 'fr');
    assert.equal(await lang(token, '?lang=xx'), 'de', 'an unknown ?lang falls back to the contact');
    assert.match(
      await (await fetch(`${server.httpUrl}/u/${benToken}?lang=es`)).text(),
      /<h1>Preferencias de correo<\/h1>/,
    );
  });

  it('refuses a post without the page’s form token, from another site, or not a form: nothing changes', async () => {
    const html = await (await page()).text();
    const form = formOf(html);
    const untick = new URLSearchParams([
      ['action', 'save'],
      ['form', form],
      ['topic', topics.Deals!],
    ]);
    const refusals: Array<[Response, number]> = [
      [
        await save(
          new URLSearchParams([
            ['action', 'save'],
            ['topic', topics.Deals!],
          ]),
        ),
        400,
      ],
      [
        await save(
          new URLSearchParams([
            ['action', 'save'],
            ['form', `${form}x`],
            ['topic', topics.Deals!],
          ]),
        ),
        400,
      ],
      [await save(untick, { origin: 'https://evil.example' }), 403],
      [await save(untick, { 'sec-fetch-site': 'cross-site' }), 403],
      [await save(untick, { 'sec-fetch-site': 'same-site' }), 403],
      [
        await fetch(`${server.httpUrl}/u/${token}/preferences`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        }),
        403,
      ],
      [
        await fetch(`${server.httpUrl}/u/${token}/preferences`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `form=${'x'.repeat(70_000)}`,
        }),
        403,
      ],
    ];
    for (const [i, [res, status]] of refusals.entries()) {
      assert.equal(res.status, status, `refusal ${i}`);
      const body = await res.text();
      assert.match(
        body,
        /Diese Seite war nicht mehr aktuell, daher wurde nichts geändert/,
        'the page again, with a fresh form',
      );
      assert.notEqual(formOf(body), '');
    }
    // Another link's form token is not this link's.
    const benToken = tokenOf('ben@dest.test');
    const benForm = formOf(await (await fetch(`${server.httpUrl}/u/${benToken}`)).text());
    assert.equal(
      (
        await save(
          new URLSearchParams([
            ['action', 'save'],
            ['form', benForm],
          ]),
        )
      ).status,
      400,
    );
    // A day later the page's form is out of date.
    clock.advance(24 * 3600_000 + 1000);
    assert.equal((await save(untick)).status, 400);
    const topicsNow = (await request(server.httpUrl, 'GET', '/v1/contacts/anna@dest.test/topics', { key })).body
      .data as Array<{ id: string; subscription: string }>;
    assert.deepEqual(
      new Set(topicsNow.map((t) => `${t.id} ${t.subscription}`)),
      new Set([`${topics['Product news']} opt_in`, `${topics.Deals} opt_in`, `${topics.Events} opt_out`]),
    );
    // HEAD and GET (link scanners) change nothing either.
    assert.equal((await fetch(`${server.httpUrl}/u/${token}`, { method: 'HEAD' })).status, 200);
    assert.equal(
      (await request(server.httpUrl, 'GET', '/v1/contacts/anna@dest.test', { key })).body.unsubscribed,
      false,
    );
  });

  it('saves the ticked topics from the form, emits subscriber.updated with them, and shows the page again', async () => {
    const form = formOf(await (await page()).text());
    // Anna keeps Deals, takes Events, leaves Product news.
    const res = await save(
      new URLSearchParams([
        ['form', form],
        ['topic', topics.Deals!],
        ['topic', topics.Events!],
        ['action', 'save'],
      ]),
      { origin: server.httpUrl, 'sec-fetch-site': 'same-origin' },
    );
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `../${token}?notice=saved`);
    const after = new URL(res.headers.get('location')!, `${server.httpUrl}/u/${token}/preferences`);
    assert.equal(after.pathname, `/u/${token}`);
    const html = await (await fetch(after)).text();
    assert.match(html, /Ihre Auswahl ist gespeichert/);
    assert.ok(html.includes(`value="${topics['Product news']}">`));
    assert.ok(html.includes(`value="${topics.Events}" checked>`));
    const events = await server.runtime.store.db
      .selectFrom('events')
      .select(['type', 'data'])
      .where('type', '=', 'subscriber.updated')
      .execute();
    const update = events.map((e) => JSON.parse(e.data)).find((d) => d.via === 'preference_centre');
    assert.equal(update.email, 'anna@dest.test');
    assert.deepEqual(
      new Set(update.topics.map((t: { name: string; subscription: string }) => `${t.name} ${t.subscription}`)),
      new Set(['Product news opt_out', 'Deals opt_in', 'Events opt_in']),
    );
    // The same choices again change nothing and report nothing.
    const again = await save(
      new URLSearchParams([
        ['form', formOf(html)],
        ['topic', topics.Deals!],
        ['topic', topics.Events!],
      ]),
    );
    assert.equal(again.status, 303);
    assert.equal(
      (
        await server.runtime.store.db
          .selectFrom('events')
          .select('id')
          .where('type', '=', 'subscriber.updated')
          .execute()
      ).length,
      events.length,
    );
  });

  it('the next broadcast to a topic Anna left skips her; one to a topic she kept reaches her', async () => {
    assert.deepEqual(await broadcast(segment, 'Product news', 'More news'), ['ben@dest.test']);
    assert.deepEqual(await broadcast(segment, 'Deals', 'Spring deals'), ['anna@dest.test', 'ben@dest.test']);
    assert.deepEqual(await broadcast(segment, 'Events', 'Meet us'), ['anna@dest.test']);
  });

  it('the one-click POST still unsubscribes at once; the page then offers to subscribe again', async () => {
    const oneClick = await fetch(`${server.httpUrl}/u/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    assert.equal(oneClick.status, 200);
    const html = await oneClick.text();
    assert.match(html, /<h1>Sie sind abgemeldet<\/h1>/);
    assert.equal(
      (await request(server.httpUrl, 'GET', '/v1/contacts/anna@dest.test', { key })).body.unsubscribed,
      true,
    );
    assert.deepEqual(
      await broadcast(segment, 'Deals', 'Deals again'),
      ['ben@dest.test'],
      'unsubscribed from everything',
    );

    const res = await save(
      new URLSearchParams([
        ['action', 'resubscribe'],
        ['form', formOf(html)],
      ]),
    );
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `../${token}?notice=resubscribed`);
    assert.match(
      await (await page('?notice=resubscribed')).text(),
      /Willkommen zurück: anna@dest\.test ist wieder angemeldet/,
    );
    assert.equal(
      (await request(server.httpUrl, 'GET', '/v1/contacts/anna@dest.test', { key })).body.unsubscribed,
      false,
    );
    assert.equal(
      await server.runtime.store.db
        .selectFrom('suppressions')
        .select('address')
        .where('address', '=', 'anna@dest.test')
        .executeTakeFirst(),
      undefined,
      'the opt-out suppression is lifted',
    );
    assert.deepEqual(await broadcast(segment, 'Deals', 'Deals once more'), ['anna@dest.test', 'ben@dest.test']);
  });

  it('a link that is not genuine is a 400 page, on every method', async () => {
    for (const [method, path] of [
      ['GET', `/u/${tampered(token)}`],
      ['POST', `/u/${tampered(token)}`],
      ['POST', `/u/${tampered(token)}/preferences`],
      ['GET', '/u/nope'],
    ] as const) {
      const res = await fetch(`${server.httpUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-language': 'es' },
        body: method === 'POST' ? 'form=x' : undefined,
      });
      assert.equal(res.status, 400, `${method} ${path}`);
      assert.match(await res.text(), /Este enlace no es válido/);
    }
    assert.equal((await fetch(`${server.httpUrl}/u/${token}/preferences`)).status, 404, 'the form takes posts only');
  });

  it('an address that is no contact can only unsubscribe', async () => {
    assert.equal(
      (
        await post('/v1/emails', {
          from: 'news@shop.example',
          to: 'stranger@dest.test',
          subject: 'Hi',
          html: '<p>Hi</p>',
          type: 'marketing',
        })
      ).status,
      200,
    );
    await mx.waitFor(mx.messages.length + 1);
    const strangerToken = tokenOf('stranger@dest.test');
    const html = await (await fetch(`${server.httpUrl}/u/${strangerToken}`)).text();
    assert.ok(!html.includes('type="checkbox"'));
    assert.match(html, /Unsubscribe from everything/);
    assert.ok(!html.includes('name="form"'), 'no form to choose with');
    const res = await fetch(`${server.httpUrl}/u/${strangerToken}/preferences`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'action=save&form=x',
    });
    assert.equal(res.status, 400);
  });

  it('the workspace’s branding is set from the CLI; a logo must be an https URL', async () => {
    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const bad = await runCliProcess(
      ['workspaces', 'set-branding', server.workspaceId, '--logo-url', 'http://cdn.shop.example/logo.png'],
      env,
    );
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /logo_url: must be an https URL/);
    const good = await runCliProcess(
      ['workspaces', 'set-branding', server.workspaceId, '--name', 'Shop', '--logo-url', '', '--json'],
      env,
    );
    assert.equal(good.code, 0, good.stderr);
    assert.deepEqual([JSON.parse(good.stdout).name, JSON.parse(good.stdout).logo_url], ['Shop', null]);
    assert.ok(!(await (await page()).text()).includes('<img'), 'no logo, no image');
  });
});
