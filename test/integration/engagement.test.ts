import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { Webhook } from 'standardwebhooks';
import { rollUpStats } from '../../src/tasks/roll-up-stats.js';
import { eventually } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { manualClock, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * People and machines at the tracking endpoints, end to end: real messages delivered to the
 * loopback MX, their pixels and links fetched as a person in Chromium, Apple Mail Privacy
 * Protection (its bare user agent from Apple's relay networks), Gmail's image proxy and
 * security scanners (HEAD, their networks and agents, too soon after delivery, every link at
 * once) would, each found classified in the event, the signed webhook, the metrics and the
 * workflows it starts. The server sits behind a trusted proxy: the client address comes from
 * X-Forwarded-For. The clock is the test's: delivery happens at a known moment.
 */

const CHROMIUM = '/usr/bin/chromium';
const CHROME_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const SAFARI_IOS =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';
const GMAIL_PROXY = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';

describe('engagement: people apart from machines', () => {
  let mx: TestMx;
  let receiver: WebhookReceiver;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let key: string;
  let secret: string;
  // Near real time: webhook signatures carry the server's time, and receivers refuse one 5 minutes off.
  const clock = manualClock();
  const ids: Record<string, string> = {};
  const links: Record<string, { pixel: string; clicks: string[]; html: string }> = {};

  before(async () => {
    receiver = await startWebhookReceiver();
    rig = await startDeliveringServer({
      delivery: { pollInterval: 50, signingThreads: 0 },
      config: {
        http: { publicUrl: 'http://mail.shop.example', trustProxy: true },
        webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
        workflows: { pollInterval: 50 },
      },
      senders: ['shop.example'],
      clock,
    });
    ({ server, mx } = rig);
    key = await server.key();
    const hook = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key,
      body: { url: `${receiver.url}/engagement`, events: ['email.opened', 'email.clicked'] },
    });
    assert.equal(hook.status, 201, show(hook));
    secret = hook.body.secret;
  });
  after(async () => {
    await rig?.close();
    await receiver?.close();
  });

  const local = (text: string) => text.replaceAll('http://mail.shop.example', server.httpUrl);
  const hit = (url: string, headers: Record<string, string>, method = 'GET') =>
    fetch(local(url), { method, redirect: 'manual', headers });
  const events = async (id: string, type: string) =>
    (
      (await request(server.httpUrl, 'GET', `/v1/emails/${id}/events`, { key })).body.events as Array<{
        type: string;
        data: Record<string, any>;
      }>
    )
      .filter((e) => e.type === type)
      .map((e) => e.data);

  it('delivers one tracked marketing message to each reader', async () => {
    const landing = `${server.httpUrl}/healthz`;
    const html = `<html><body><p>Spring sale</p><a href="${landing}?shoes">Shoes</a> <a href="${landing}?hats">Hats</a></body></html>`;
    for (const who of ['person', 'apple', 'gmail', 'scanned', 'burst']) {
      if (who !== 'burst')
        assert.equal(
          (await request(server.httpUrl, 'POST', '/v1/subscribers', { key, body: { email: `${who}@dest.test` } }))
            .status,
          201,
        );
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: {
          from: 'Shop <news@shop.example>',
          to: `${who}@dest.test`,
          subject: 'Spring sale',
          html,
          type: 'marketing',
        },
      });
      assert.equal(res.status, 200, show(res));
      ids[who] = res.body.id;
    }
    await mx.waitFor(5);
    for (const who of Object.keys(ids)) {
      await eventually(
        async () => (await server.runtime.services.emails.get(server.workspaceId, ids[who]!)).status === 'delivered',
        15_000,
        `${who} delivered`,
      );
      const parsed = await simpleParser(mx.messages.find((m) => m.to.includes(`${who}@dest.test`))!.raw);
      const body = String(parsed.html);
      links[who] = {
        html: body,
        pixel: /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(body)![1]!,
        clicks: [...body.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)].map((m) => m[1]!),
      };
      assert.equal(links[who].clicks.length, 2);
    }
  });

  it('workflows listen: one for people only (the default), one that takes machines too', async () => {
    for (const [name, include] of [
      ['people', false],
      ['everyone', true],
    ] as const) {
      const created = await request(server.httpUrl, 'POST', '/v1/automations', {
        key,
        body: {
          name,
          status: 'enabled',
          steps: [
            {
              key: 'start',
              type: 'trigger',
              config: { event_name: 'email.clicked', ...(include ? { include_machines: true } : {}) },
            },
          ],
          connections: [],
        },
      });
      assert.equal(created.status, 201, show(created));
    }
  });

  it('a security scanner, seconds after delivery: HEAD, its network, its agent, too fast for a person', async () => {
    const [shoes, hats] = links.scanned!.clicks;
    assert.equal(
      (await hit(shoes!, { 'user-agent': CHROME_UA }, 'HEAD')).status,
      302,
      'a scanner still gets its redirect',
    );
    assert.equal((await hit(shoes!, { 'user-agent': CHROME_UA, 'x-forwarded-for': '40.107.22.15' })).status, 302);
    assert.equal(
      (await hit(hats!, { 'user-agent': 'Barracuda Sentinel (EE)', 'x-forwarded-for': '198.51.100.20' })).status,
      302,
    );
    clock.advance(2000);
    assert.equal((await hit(hats!, { 'user-agent': CHROME_UA, 'x-forwarded-for': '198.51.100.21' })).status, 302);
    assert.equal(
      (await hit(links.scanned!.pixel, { 'user-agent': CHROME_UA, 'x-forwarded-for': '40.92.5.5' })).status,
      200,
    );
    const clicks = await events(ids.scanned!, 'email.clicked');
    assert.deepEqual(
      clicks.map((c) => [c.classification, c.is_machine, c.classified_by]),
      [
        ['scanner', true, 'head_request'],
        ['scanner', true, 'network:microsoft-eop'],
        ['scanner', true, 'agent:barracuda'],
        ['scanner', true, 'click_after_delivery'],
      ],
    );
    assert.deepEqual(
      (await events(ids.scanned!, 'email.opened')).map((o) => [o.classification, o.classified_by]),
      [['scanner', 'network:microsoft-eop']],
    );
    clock.advance(60_000);
  });

  it(
    'a person in a browser: the pixel loads with the message, the link is clicked',
    { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent` },
    async () => {
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
      try {
        // A person's browser says who it is; a headless one says "HeadlessChrome", a machine's name.
        const page = await (await browser.newContext({ userAgent: CHROME_UA })).newPage();
        const opened = page.waitForResponse((r) => r.url().includes('/t/o/'));
        await page.setContent(local(links.person!.html));
        assert.equal((await opened).status(), 200);
        await Promise.all([page.waitForURL(/\/healthz\?shoes$/), page.click('text=Shoes')]);
      } finally {
        await browser.close();
      }
      const [open] = await events(ids.person!, 'email.opened');
      const [click] = await events(ids.person!, 'email.clicked');
      assert.deepEqual([open!.classification, open!.is_machine, open!.user_agent], ['human', false, CHROME_UA]);
      assert.deepEqual(
        [click!.classification, click!.is_machine, click!.url, click!.first_human],
        ['human', false, `${server.httpUrl}/healthz?shoes`, true],
      );
    },
  );

  it("Apple Mail Privacy Protection: the bare agent from Apple's relays; a click through the relay is a person's", async () => {
    await hit(links.apple!.pixel, { 'user-agent': 'Mozilla/5.0', 'x-forwarded-for': '172.224.226.10, 10.0.0.1' });
    await hit(links.apple!.clicks[1]!, { 'user-agent': SAFARI_IOS, 'x-forwarded-for': '172.224.226.11' });
    const [open] = await events(ids.apple!, 'email.opened');
    assert.deepEqual(
      [open!.classification, open!.is_machine, open!.classified_by, open!.first_human],
      ['apple_mpp', true, 'agent:apple-mail', false],
    );
    const [click] = await events(ids.apple!, 'email.clicked');
    assert.deepEqual([click!.classification, click!.is_machine], ['human', false]);
  });

  it("Gmail's image proxy: a person's open, its device unknown", async () => {
    await hit(links.gmail!.pixel, { 'user-agent': GMAIL_PROXY, 'x-forwarded-for': '66.249.84.1' });
    const [open] = await events(ids.gmail!, 'email.opened');
    assert.deepEqual(
      [open!.classification, open!.is_machine, open!.classified_by, open!.first_human],
      ['proxy', false, 'agent:gmail', true],
    );
  });

  it('every link of a message within a second: a scanner, and the click before is corrected', async () => {
    const [shoes, hats] = links.burst!.clicks;
    await hit(shoes!, { 'user-agent': CHROME_UA, 'x-forwarded-for': '203.0.113.9' });
    await hit(shoes!, { 'user-agent': CHROME_UA, 'x-forwarded-for': '203.0.113.9' });
    const before = await events(ids.burst!, 'email.clicked');
    assert.deepEqual(
      before.map((c) => c.classification),
      ['human', 'human'],
      'the same link twice is a double click',
    );
    clock.advance(300);
    await hit(hats!, { 'user-agent': CHROME_UA, 'x-forwarded-for': '203.0.113.9' });
    const clicks = await events(ids.burst!, 'email.clicked');
    assert.deepEqual(
      clicks.map((c) => [c.classification, c.classified_by, c.first_human]),
      [
        ['scanner', 'link_burst', false],
        ['scanner', 'link_burst', false],
        ['scanner', 'link_burst', false],
      ],
    );
    clock.advance(60_000);
  });

  it('the signed webhooks carry classification and is_machine', async () => {
    // The burst's first two went out before the third click showed what they were.
    const browser = existsSync(CHROMIUM) ? 1 : 0;
    // Delivery is at least once (the test's clock jumps past leases): one per webhook-id.
    const unique = () => [
      ...new Map(
        receiver.received.filter((r) => r.path === '/engagement').map((r) => [r.headers['webhook-id'], r]),
      ).values(),
    ];
    const hooks = await eventually(
      async () => (unique().length >= 11 + 2 * browser ? unique() : undefined),
      120_000,
      'every webhook',
    );
    const wh = new Webhook(secret);
    const seen = hooks.map((h) => {
      const payload = wh.verify(h.body, h.headers as Record<string, string>) as {
        type: string;
        data: Record<string, unknown>;
      };
      return `${payload.type} ${(payload.data.to as string[])[0]} ${payload.data.classification} ${payload.data.is_machine}`;
    });
    const expected = [
      'email.clicked scanned@dest.test scanner true',
      'email.clicked scanned@dest.test scanner true',
      'email.clicked scanned@dest.test scanner true',
      'email.clicked scanned@dest.test scanner true',
      'email.opened scanned@dest.test scanner true',
      'email.opened person@dest.test human false',
      'email.clicked person@dest.test human false',
      'email.opened apple@dest.test apple_mpp true',
      'email.clicked apple@dest.test human false',
      'email.opened gmail@dest.test proxy false',
      'email.clicked burst@dest.test scanner true',
      'email.clicked burst@dest.test scanner true',
      'email.clicked burst@dest.test scanner true',
    ];
    const person = browser ? expected : expected.filter((e) => !e.includes('person@'));
    // A webhook is rendered from the event when it is sent: the burst's first clicks went out
    // as a person's if they left before the third click corrected them, as a scanner's after.
    assert.deepEqual(
      seen.map((s) => s.replace('burst@dest.test human false', 'burst@dest.test scanner true')).sort(),
      person.sort(),
    );
  });

  it('metrics count people apart from machines', async () => {
    await rollUpStats(server.runtime.deps);
    const names =
      'delivered,opened,unique_opened,human_opened,unique_human_opened,machine_opened,clicked,unique_clicked,human_clicked,unique_human_clicked,machine_clicked,human_open_rate,human_click_rate';
    const res = await request(server.httpUrl, 'GET', `/v1/emails/metrics?metrics=${names}`, { key });
    assert.equal(res.status, 200, show(res));
    const browser = existsSync(CHROMIUM) ? 1 : 0;
    assert.deepEqual(res.body.totals, {
      delivered: 5,
      // Opens: the scanner's and Apple's are machines'; Gmail's proxy and the browser are people's.
      opened: 3 + browser,
      unique_opened: 3 + browser,
      human_opened: 1 + browser,
      unique_human_opened: 1 + browser,
      machine_opened: 2,
      // Clicks: the scanner's four and the burst's three are machines'; the browser's and Apple's relay's are people's.
      clicked: 8 + browser,
      unique_clicked: 3 + browser,
      human_clicked: 1 + browser,
      unique_human_clicked: 1 + browser,
      machine_clicked: 7,
      human_open_rate: (1 + browser) / 5,
      human_click_rate: (1 + browser) / 5,
    });
  });

  it('workflows started by people only, unless they ask for machines', async () => {
    const runs = async () => {
      // Who was in a run of which workflow (a trigger-only run ends at once: a later click may start another).
      const rows = await server.runtime.store.db
        .selectFrom('workflow_runs')
        .innerJoin('workflows', 'workflows.id', 'workflow_runs.workflow_id')
        .select(['workflows.name', 'workflow_runs.email'])
        .execute();
      return [...new Set(rows.map((r) => `${r.name} ${r.email}`))].sort();
    };
    const browser = existsSync(CHROMIUM);
    const expected = [
      ...(browser ? ['everyone person@dest.test', 'people person@dest.test'] : []),
      'everyone apple@dest.test',
      'everyone scanned@dest.test',
      'people apple@dest.test',
    ].sort();
    await eventually(
      async () => JSON.stringify(await runs()) === JSON.stringify(expected),
      120_000,
      'the workflow runs',
    );
    // Nothing more comes: the scanner's clicks started no run of the people-only workflow.
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(await runs(), expected);
  });
});
