import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { eventually, routeDomain, verifyDkim } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import type { TestDns } from '../helpers/dns-server.js';
import { request, show, tampered } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

/** A header of a raw message, unfolded. */
const headerOf = (raw: Buffer, name: string): string => {
  const head = raw
    .toString('latin1')
    .split('\r\n\r\n')[0]!
    .replace(/\r\n[ \t]+/g, ' ');
  return new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
};

describe('subscribers, audiences, campaigns and one-click unsubscribe', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let key: string;
  // Campaigns are limited to 5 a minute: each test starts a minute later.
  const clock = manualClock();
  beforeEach(() => clock.advance(60_000));

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { retrySchedule: [1], pollInterval: 50, signingThreads: 1 },
      config: { http: { publicUrl: 'http://127.0.0.1:1' } },
      senders: ['shop.example'],
      clock,
    });
    ({ server, dns, mx } = rig);
    key = await server.key();
    routeDomain(dns, 'example.org', [{ name: 'mx.example.org', preference: 10, a: ['127.0.0.1'] }]);
  });
  after(async () => {
    await rig?.close();
  });

  const post = (path: string, body: unknown) => request(server.httpUrl, 'POST', path, { key, body });
  const get = (path: string) => request(server.httpUrl, 'GET', path, { key });
  const received = (to: string) => mx.messages.filter((m) => m.to.includes(to));
  const waitForCampaign = (id: string) =>
    eventually(
      async () => {
        const res = await get(`/v1/campaigns/${id}`);
        return res.body.status === 'sent' ? res.body : undefined;
      },
      20_000,
      `campaign ${id} to be sent`,
    );

  it('upserts subscribers by email and lists them in both shapes', async () => {
    const first = await post('/api/v1/subscribers', {
      email: 'alice@example.org',
      first_name: 'Al',
      tags: ['news', 'vip'],
      external_id: 'u-1',
    });
    assert.equal(first.status, 201, show(first));
    assert.deepEqual(Object.keys(first.body.subscriber).sort(), ['created_at', 'email', 'id', 'source', 'status']);
    assert.equal(first.body.subscriber.status, 'subscribed');
    assert.equal(first.body.subscriber.source, 'api');
    const again = await post('/api/v1/subscribers', {
      email: 'Alice@Example.org',
      first_name: 'Alice',
      tags: ['news', 'vip'],
      external_id: 'u-1',
    });
    assert.equal(again.status, 201, 'an existing email is updated, not rejected');
    assert.equal(again.body.subscriber.id, first.body.subscriber.id);

    const domain = (await get('/v1/domains')).body.domains[0];
    for (const s of [
      { email: 'bob@example.org', first_name: 'Bob', tags: ['news'], domain_id: domain.id },
      { email: 'carol@example.org', first_name: 'Carol', tags: ['other'] },
      { email: 'dave@example.org', first_name: 'Dave', tags: ['news'] },
      { email: 'erin@example.org', first_name: 'Erin', tags: ['news'] },
    ]) {
      assert.equal((await post('/v1/subscribers', s)).status, 201);
    }
    const legacy = await get('/api/v1/subscribers?limit=2');
    assert.equal(legacy.status, 200, show(legacy));
    assert.equal(legacy.body.success, true);
    assert.equal(legacy.body.total, 5);
    assert.equal(legacy.body.limit, 2);
    assert.equal(legacy.body.offset, 0);
    assert.equal(legacy.body.subscribers.length, 2);
    const byExternal = await get('/api/v1/subscribers?external_id=u-1');
    assert.deepEqual(
      byExternal.body.subscribers.map((s: { email: string; first_name: string }) => [s.email, s.first_name]),
      [['alice@example.org', 'Alice']],
    );
    const bob = (await get('/v1/subscribers?email=bob@example.org')).body.subscribers[0];
    assert.deepEqual(bob.primary_domain, { id: domain.id, domain_name: 'shop.example' });

    const tagged = await get('/v1/subscribers?tag=news&limit=500');
    assert.equal(tagged.body.pagination.limit, 20, 'a limit outside 1..100 falls back to 20');
    assert.equal(tagged.body.pagination.total, 4);
    assert.equal(tagged.body.pagination.has_more, false);

    const events = await server.runtime.store.db
      .selectFrom('events')
      .select(['type'])
      .where('type', 'like', 'subscriber.%')
      .execute();
    assert.equal(events.filter((e) => e.type === 'subscriber.created').length, 5);
    assert.equal(events.filter((e) => e.type === 'subscriber.updated').length, 1);
  });

  it('refuses bad subscriber input with a 400 naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ email: 'not-an-email' }, /^email:/],
      [{ email: 'x@example.org', domain_id: '01a200af-0000-7000-8000-000000000000' }, /^domain_id:/],
      [{ email: 'x@example.org', metadata: { big: 'x'.repeat(9000) } }, /^metadata:/],
      [{ email: 'x@example.org', tags: ['ok', ''] }, /^tags\[1\]:/],
      [{ email: 'x@example.org', first_name: 'A\r\nB' }, /^first_name:/],
    ];
    for (const [body, message] of cases) {
      const res = await post('/api/v1/subscribers', body);
      assert.equal(res.status, 400, show(res));
      assert.equal(res.body.code, 'VALIDATION_ERROR');
      assert.match(res.body.error, message);
    }
  });

  it('sends a personal copy to every subscriber with a matching tag, skipping unsubscribed and suppressed ones', async () => {
    const dave = (await get('/v1/subscribers?email=dave@example.org')).body.subscribers[0];
    const patched = await request(server.httpUrl, 'PATCH', `/v1/subscribers/${dave.id}`, {
      key,
      body: { status: 'unsubscribed' },
    });
    assert.equal(patched.body.status, 'unsubscribed', show(patched));
    assert.equal((await post('/v1/suppressions', { email: 'erin@example.org', reason: 'manual' })).status, 201);

    const res = await post('/api/v1/campaigns/send', {
      subject: 'Spring news for {{first_name}}',
      from_name: 'Shop',
      from_email: 'news@shop.example',
      html: '<p>Hello {{first_name}} ({{email}}), {{greeting}}! <a href="{{unsubscribe_url}}">Leave</a></p>',
      tags: ['news'],
      variables: { greeting: 'spring is here', first_name: 'not used' },
    });
    assert.equal(res.status, 202, show(res));
    assert.equal(res.body.success, true);
    assert.match(res.body.campaignId, /^[0-9a-f-]{36}$/);
    assert.equal(res.body.message, 'Campaign queued: 2 subscribers will receive it');

    const campaign = await waitForCampaign(res.body.campaignId);
    assert.equal(campaign.counts.queued, 2);
    assert.equal(campaign.counts.delivered, 2);
    assert.deepEqual(
      mx.messages.flatMap((m) => m.to).sort(),
      ['alice@example.org', 'bob@example.org'],
      'exactly the subscribed, unsuppressed subscribers tagged news',
    );
    const alice = await simpleParser(received('alice@example.org')[0]!.raw);
    assert.equal(alice.subject, 'Spring news for Alice');
    assert.match(alice.html || '', /Hello Alice \(alice@example\.org\), spring is here!/);
    assert.match(
      headerOf(received('alice@example.org')[0]!.raw, 'List-Unsubscribe-Post'),
      /^List-Unsubscribe=One-Click$/,
    );
    // RFC 8058 §4: both headers are covered by a valid DKIM signature (checked by mailauth's
    // verifier with the keys in DNS), and the ones that must not be added later are over-signed.
    const aliceRaw = received('alice@example.org')[0]!.raw;
    const [dkim] = await verifyDkim(aliceRaw, dns);
    assert.equal(dkim!.status.result, 'pass', JSON.stringify(dkim!.status));
    const h = headerOf(aliceRaw, 'DKIM-Signature').replace(/\s+/g, '');
    const signed = /(?:^|;)h=([^;]*)/.exec(h)![1]!.toLowerCase().split(':');
    for (const name of ['from', 'subject', 'list-unsubscribe', 'list-unsubscribe-post']) {
      assert.equal(signed.filter((n) => n === name).length, 2, `${name} signed and over-signed: h=${signed.join(':')}`);
    }

    const sent = await server.runtime.store.db
      .selectFrom('events')
      .select(['data'])
      .where('type', '=', 'campaign.sent')
      .execute();
    assert.equal(sent.length, 1);
    assert.equal(JSON.parse(sent[0]!.data).campaign_id, res.body.campaignId);
  });

  it('unsubscribes with one click from the delivered message, and the next campaign skips that address', async () => {
    const bobRaw = received('bob@example.org')[0]!.raw;
    const bobMail = await simpleParser(bobRaw);
    const url = headerOf(bobRaw, 'List-Unsubscribe').replace(/^<|>$/g, '');
    assert.match(url, /^http:\/\/127\.0\.0\.1:1\/u\/[A-Za-z0-9_.-]+$/, 'a link on http.publicUrl');
    const path = new URL(url).pathname;

    const forged = await fetch(`${server.httpUrl}${tampered(path)}`, {
      method: 'POST',
      body: 'List-Unsubscribe=One-Click',
    });
    assert.equal(forged.status, 400);
    const stillIn = (await get('/v1/subscribers?email=bob@example.org')).body.subscribers[0];
    assert.equal(stillIn.status, 'subscribed', 'a tampered token changes nothing');

    // GET is the preference centre: it changes nothing, its button posts the one-click form.
    const page = await fetch(`${server.httpUrl}${path}`);
    assert.equal(page.status, 200);
    const token = path.slice('/u/'.length);
    assert.ok(
      (await page.text()).includes(
        `<form method="post" action="${token}"><input type="hidden" name="List-Unsubscribe" value="One-Click">`,
      ),
    );

    const oneClick = await fetch(`${server.httpUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    assert.equal(oneClick.status, 200);
    const bob = (await get('/v1/subscribers?email=bob@example.org')).body.subscribers[0];
    assert.equal(bob.status, 'unsubscribed');
    const suppression = await server.runtime.store.db
      .selectFrom('suppressions')
      .selectAll()
      .where('address', '=', 'bob@example.org')
      .executeTakeFirst();
    assert.equal(suppression?.scope, 'marketing');
    const events = await server.runtime.store.db
      .selectFrom('events')
      .select(['type', 'email_id'])
      .where('type', '=', 'subscriber.unsubscribed')
      .execute();
    assert.ok(
      events.some((e) => e.email_id === bobMail.messageId!.replace(/^<|@.*$/g, '')),
      'the event names the email it came from',
    );

    mx.messages.length = 0;
    const next = await post('/api/v1/campaigns/send', {
      subject: 'Second',
      from_name: 'Shop',
      from_email: 'news@shop.example',
      html: '<p>Again</p>',
      tags: ['news'],
    });
    assert.equal(next.body.message, 'Campaign queued: 1 subscriber will receive it');
    const campaign = await waitForCampaign(next.body.campaignId);
    assert.deepEqual(
      mx.messages.flatMap((m) => m.to),
      ['alice@example.org'],
    );
    assert.equal(campaign.counts.delivered, 1);

    const first = (await get('/v1/campaigns')).body.campaigns.find((c: { subject: string }) =>
      c.subject.startsWith('Spring'),
    );
    const withCounts = await get(`/v1/campaigns/${first.id}`);
    assert.equal(withCounts.body.counts.unsubscribed, 1);
  });

  it('targets an audience', async () => {
    const audience = await post('/v1/audiences', { name: 'Others' });
    assert.equal(audience.status, 201, show(audience));
    const added = await post(`/v1/audiences/${audience.body.id}/members`, { emails: ['carol@example.org'] });
    assert.equal(added.body.added, 1, show(added));
    assert.equal(added.body.audience.member_count, 1);
    const missing = await post(`/v1/audiences/${audience.body.id}/members`, { emails: ['nobody@example.org'] });
    assert.equal(missing.status, 400);
    mx.messages.length = 0;
    const res = await post('/v1/campaigns', {
      subject: 'Just you',
      from_name: 'Shop',
      from_email: 'news@shop.example',
      html: '<p>Hi {{first_name}}</p>',
      audience_id: audience.body.id,
    });
    assert.equal(res.status, 202, show(res));
    assert.equal(res.body.recipients, 1);
    await waitForCampaign(res.body.id);
    assert.deepEqual(
      mx.messages.flatMap((m) => m.to),
      ['carol@example.org'],
    );
  });

  it('refuses unknown tags, bad senders and content in the legacy envelope', async () => {
    const base = { subject: 's', from_name: 'Shop', from_email: 'news@shop.example', html: '<p>x</p>' };
    const cases: Array<[unknown, number, RegExp]> = [
      [{ ...base, tags: ['nope'] }, 400, /^tags: no subscriber has the tag "nope"$/],
      [{ ...base, from_email: 'x@elsewhere.example' }, 403, /^from_email:/],
      [{ ...base, html: undefined }, 400, /^html: is required/],
      [{ ...base, audience_id: 'abc' }, 400, /^audience_id:/],
    ];
    for (const [body, status, message] of cases) {
      const res = await post('/api/v1/campaigns/send', body);
      assert.equal(res.status, status, show(res));
      assert.match(res.body.error, message);
    }
  });

  it('limits campaigns to 5 per minute', async () => {
    const clock = manualClock(Math.floor(Date.now() / 60_000) * 60_000 + 1000);
    const fresh = await startTestServer({ delivery: { enabled: false, dnsServers: [dns.server] } }, { clock });
    try {
      const k = await fresh.key({ test: true });
      await fresh.runtime.services.domains.add(fresh.workspaceId, { domain: 'shop.example' });
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await request(fresh.httpUrl, 'POST', '/api/v1/campaigns/send', {
          key: k,
          body: { subject: 's', from_name: 'S', from_email: 'n@shop.example', html: 'h' },
        });
        statuses.push(res.status);
        if (i === 5) {
          assert.equal(res.body.code, 'RATE_LIMITED');
          assert.ok(Number(res.headers.get('retry-after')) >= 1);
        }
      }
      assert.deepEqual(statuses, [202, 202, 202, 202, 202, 429]);
    } finally {
      await fresh.close();
    }
  });

  it("queues a campaign through the door of every send: at the workspace's marketing rate, beside its API mail", async () => {
    const clock = manualClock(Math.floor(Date.now() / 1000) * 1000 + 100);
    const fresh = await startTestServer({ delivery: { enabled: false, dnsServers: [dns.server] } }, { clock });
    try {
      const k = await fresh.key({ test: true });
      await fresh.runtime.services.domains.add(fresh.workspaceId, { domain: 'shop.example' });
      await fresh.runtime.services.workspaces.setPlan(fresh.workspaceId, 'enterprise', { marketingPerSecond: 20 });
      for (let i = 0; i < 50; i++)
        await request(fresh.httpUrl, 'POST', '/api/v1/subscribers', {
          key: k,
          body: { email: `r${i}@example.org`, tags: ['all'] },
        });
      const campaign = await request(fresh.httpUrl, 'POST', '/v1/campaigns', {
        key: k,
        body: { subject: 's', from_name: 'S', from_email: 'n@shop.example', html: '<p>h</p>', tags: ['all'] },
      });
      assert.equal(campaign.status, 202, show(campaign));
      const queued = async () =>
        Number(
          (
            await fresh.runtime.store.db
              .selectFrom('emails')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('campaign_id', '=', campaign.body.id)
              .executeTakeFirstOrThrow()
          ).n,
        );
      // A page of 20 fills this second's marketing budget; the clock stands still, so the rest waits.
      await eventually(async () => (await queued()) === 20, 120_000, 'the first page queued');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(await queued(), 20, 'no more than the marketing rate in one second');
      const api = await request(fresh.httpUrl, 'POST', '/v1/emails', {
        key: k,
        body: { from: 'n@shop.example', to: 'x@example.org', subject: 'm', html: '<p>m</p>', type: 'marketing' },
      });
      assert.equal(api.status, 429, 'the campaign and API marketing mail share the budget');
      // Each second of the clock lets one more page through.
      clock.advance(1000);
      await eventually(async () => (await queued()) === 40, 120_000, 'the second page queued');
      clock.advance(1000);
      await eventually(async () => (await queued()) === 50, 120_000, 'the last page queued');
      await eventually(
        async () =>
          (await request(fresh.httpUrl, 'GET', `/v1/campaigns/${campaign.body.id}`, { key: k })).body.status ===
            'sending' || undefined,
        120_000,
        'queuing finished',
      );
    } finally {
      await fresh.close();
    }
  });
});
