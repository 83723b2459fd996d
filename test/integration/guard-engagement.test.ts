import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { eventually } from '../helpers/delivery.js';
import { request, show } from '../helpers/http.js';
import { startShop, type Shop } from '../helpers/shop.js';

/**
 * The reputation guard counts people's opens, not machines': ten tracked marketing messages
 * all "opened" by Apple Mail Privacy Protection are ten messages no person opened, and the
 * domain is warned (never held for it); one open through Gmail's image proxy, a person's, lifts
 * the rate over the threshold again.
 */
describe('reputation guard: engagement by people', () => {
  let shop: Shop;
  let server: Shop['server'];
  let mx: Shop['mx'];
  let key: string;

  before(async () => {
    shop = await startShop({ deliverability: { guard: { interval: 1, minimumSent: 10, engagementWarning: 5 } } });
    ({ server, mx, key } = shop);
  });
  after(async () => {
    await shop?.close();
  });

  const reputation = async () => {
    const res = await request(server.httpUrl, 'GET', '/v1/domains/shop.example/reputation', { key });
    assert.equal(res.status, 200, show(res));
    return res.body;
  };
  const pixels: string[] = [];

  it("warns when people opened too little of the tracked mail, Apple's prefetch not counted", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: {
          from: 'news@shop.example',
          to: `r${i}@dest.test`,
          subject: 'News',
          html: '<p>News</p>',
          type: 'marketing',
        },
      });
      assert.equal(res.status, 200, show(res));
    }
    await mx.waitFor(10);
    for (const m of mx.messages)
      pixels.push(/<img src="http:\/\/mail\.shop\.example([^"]+)"/.exec(String((await simpleParser(m.raw)).html))![1]!);
    for (const path of pixels)
      assert.equal((await fetch(`${server.httpUrl}${path}`, { headers: { 'user-agent': 'Mozilla/5.0' } })).status, 200);
    const warned = await eventually(
      async () => {
        const r = await reputation();
        return r.state === 'warning' && r.engagement.tracked === 10 && r.engagement.machine_opened === 10 ? r : null;
      },
      15_000,
      'the guard to warn',
    );
    assert.deepEqual(warned.engagement, {
      tracked: 10,
      human_opened: 0,
      machine_opened: 10,
      rate: 0,
      status: 'warning',
      warning: 5,
    });
    assert.match(
      warned.reason,
      /people opened 0% of 10 tracked marketing messages, under 5% \(10 more were opened by machines only: Apple's prefetch or scanners, not counted\)/,
    );
    assert.equal(warned.held, 0, 'engagement warns; it never holds mail');
    const updated = await server.runtime.store.db
      .selectFrom('events')
      .select('data')
      .where('type', '=', 'domain.updated')
      .execute();
    assert.ok(
      updated.some((e) => JSON.parse(e.data).reputation?.engagement?.status === 'warning'),
      'domain.updated with the engagement',
    );
  });

  it("an open through Gmail's image proxy is a person's: the rate is back over the threshold", async () => {
    const gmail = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
    assert.equal((await fetch(`${server.httpUrl}${pixels[0]}`, { headers: { 'user-agent': gmail } })).status, 200);
    const back = await eventually(
      async () => {
        const r = await reputation();
        return r.state === 'sending' ? r : null;
      },
      15_000,
      'the warning to lift',
    );
    assert.deepEqual(back.engagement, {
      tracked: 10,
      human_opened: 1,
      machine_opened: 9,
      rate: 10,
      status: 'ok',
      warning: 5,
    });
  });
});
