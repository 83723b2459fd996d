import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { eventually } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { manualClock, type TestServer } from '../helpers/server.js';

/**
 * Issue 32, defect 3: people click fast too (a password reset, a sign-in link they wait for).
 * A click seconds after delivery is a scanner's only with a second sign; an open by a browser
 * from the same client before the click makes it a person's. The clock is the test's, so
 * "8 s after delivery" is exact; the client address comes from X-Forwarded-For behind the one
 * trusted proxy (127.0.0.1).
 */

const CHROME_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const PERSON = '203.0.113.5';

describe('a click seconds after delivery', () => {
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let key: string;
  const clock = manualClock();

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { pollInterval: 50, signingThreads: 0 },
      config: { http: { publicUrl: 'http://mail.shop.example', trustProxy: ['127.0.0.1'] } },
      senders: ['shop.example'],
      clock,
    });
    ({ server, mx } = rig);
    key = await server.key();
  });
  after(async () => {
    await rig?.close();
  });

  const local = (text: string) => text.replaceAll('http://mail.shop.example', server.httpUrl);
  const hit = (url: string, ip: string, { agent = CHROME_UA, method = 'GET' } = {}) =>
    fetch(local(url), { method, redirect: 'manual', headers: { 'user-agent': agent, 'x-forwarded-for': ip } });
  const events = async (id: string, type: string) =>
    (
      (await request(server.httpUrl, 'GET', `/v1/emails/${id}/events`, { key })).body.events as Array<{
        type: string;
        data: Record<string, any>;
      }>
    )
      .filter((e) => e.type === type)
      .map((e) => e.data);
  let sent = 0;

  /** Sends one tracked message and returns its pixel and link once it is delivered; the clock then stands at its delivery. */
  async function deliverOne(who: string) {
    const html = `<html><body><p>Sign in</p><a href="${server.httpUrl}/healthz?signin">Sign in</a></body></html>`;
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: {
        from: 'Shop <news@shop.example>',
        to: `${who}@dest.test`,
        subject: 'Your sign-in link',
        html,
        type: 'marketing',
      },
    });
    assert.equal(res.status, 200, show(res));
    const id = res.body.id as string;
    await mx.waitFor(++sent);
    await eventually(
      async () => (await server.runtime.services.emails.get(server.workspaceId, id)).status === 'delivered',
      15_000,
      `${who} delivered`,
    );
    const body = String((await simpleParser(mx.messages.find((m) => m.to.includes(`${who}@dest.test`))!.raw)).html);
    return {
      id,
      pixel: /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(body)![1]!,
      link: /href="([^"]+\/t\/c\/[^"]+)"/.exec(body)![1]!,
    };
  }
  const clicks = async (id: string) =>
    (await events(id, 'email.clicked')).map((c) => [c.classification, c.classified_by]);

  it('opened in a browser 8 s after delivery, clicked 1.5 s later from the same client: a person', async () => {
    const m = await deliverOne('reader');
    clock.advance(8000);
    assert.equal((await hit(m.pixel, PERSON)).status, 200);
    clock.advance(1500);
    assert.equal((await hit(m.link, PERSON)).status, 302);
    assert.deepEqual(
      (await events(m.id, 'email.opened')).map((o) => o.classification),
      ['human'],
    );
    assert.deepEqual(await clicks(m.id), [['human', 'opened_first']]);
  });

  it('a magic link clicked 2 s after the open: a person', async () => {
    const m = await deliverOne('magic');
    clock.advance(1000);
    await hit(m.pixel, PERSON);
    clock.advance(2000);
    await hit(m.link, PERSON);
    assert.deepEqual(await clicks(m.id), [['human', 'opened_first']]);
  });

  it('a HEAD or a scanner agent after that open is still a scanner', async () => {
    const m = await deliverOne('probed');
    clock.advance(1000);
    await hit(m.pixel, PERSON);
    clock.advance(500);
    await hit(m.link, PERSON, { method: 'HEAD' });
    clock.advance(1500);
    await hit(m.link, PERSON, { agent: 'Barracuda Sentinel (EE)' });
    assert.deepEqual(await clicks(m.id), [
      ['scanner', 'head_request'],
      ['scanner', 'agent:barracuda'],
    ]);
  });

  it('a fast click with no earlier open by that client: a scanner (two signs); the same click later: a person', async () => {
    const m = await deliverOne('unopened');
    clock.advance(1000);
    await hit(m.pixel, PERSON);
    clock.advance(2000);
    await hit(m.link, '198.51.100.30');
    clock.advance(60_000);
    await hit(m.link, '198.51.100.31');
    assert.deepEqual(await clicks(m.id), [
      ['scanner', 'click_after_delivery'],
      ['human', 'default'],
    ]);
  });

  it('an open by a machine from the same client does not vouch for the click', async () => {
    const m = await deliverOne('machine');
    clock.advance(1000);
    await hit(m.pixel, PERSON, { agent: 'Mozilla/5.0' }); // Apple Mail Privacy Protection's bare agent
    clock.advance(1000);
    await hit(m.link, PERSON);
    assert.deepEqual(
      (await events(m.id, 'email.opened')).map((o) => o.classification),
      ['apple_mpp'],
    );
    assert.deepEqual(await clicks(m.id), [['scanner', 'click_after_delivery']]);
  });

  it('keeps no client address in the event: only an opaque tag', async () => {
    const all = JSON.stringify(await request(server.httpUrl, 'GET', `/v1/emails`, { key }));
    for (const { id } of JSON.parse(all).body.data as Array<{ id: string }>) {
      const text = JSON.stringify(await events(id, 'email.opened')) + JSON.stringify(await events(id, 'email.clicked'));
      assert.doesNotMatch(text, /203\.0\.113\.5|198\.51\.100\.3/);
    }
  });
});
