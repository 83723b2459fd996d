import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import type { Resend } from 'resend';
import { eventually, routeDomain, verifyDkim } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import type { TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { failed, hasFields, ok, resendClient } from '../helpers/resend.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const headerOf = (raw: Buffer, name: string): string => {
  const head = raw
    .toString('latin1')
    .split('\r\n\r\n')[0]!
    .replace(/\r\n[ \t]+/g, ' ');
  return new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
};

/**
 * Contacts, segments, topics and broadcasts through the official Resend SDK: one model with
 * the SPEC's subscribers, audiences and campaigns, whose messages take the campaign path.
 */
describe('the Resend SDK against mailsvc: contacts, segments, topics, broadcasts', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let key: string;
  let resend: Resend;
  let segmentId: string;
  let topicId: string;

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { retrySchedule: [1], pollInterval: 50, signingThreads: 1 },
      config: { http: { publicUrl: 'http://127.0.0.1:1' } },
      senders: ['shop.example'],
    });
    ({ server, dns, mx } = rig);
    key = await server.key();
    resend = resendClient(server, key);
    routeDomain(dns, 'example.org', [{ name: 'mx.example.org', preference: 10, a: ['127.0.0.1'] }]);
  });
  after(async () => {
    await rig?.close();
  });

  it('creates, reads, renames, lists and removes segments (the SPEC audiences)', async () => {
    const created = ok(await resend.segments.create({ name: 'Newsletter' }), 'segments.create');
    hasFields(created, { object: 'string', id: 'string', name: 'string' }, 'CreateSegmentResponseSuccess');
    segmentId = created.id;
    const got = ok(await resend.segments.get(segmentId), 'segments.get');
    hasFields(
      got,
      { object: 'string', id: 'string', name: 'string', created_at: 'string' },
      'GetSegmentResponseSuccess',
    );
    ok(await resend.segments.update(segmentId, { name: 'Weekly news' }), 'segments.update');
    const other = ok(await resend.audiences.create({ name: 'Temporary' }), 'audiences.create (the deprecated name)');
    const list = ok(await resend.segments.list(), 'segments.list');
    assert.equal(list.object, 'list');
    for (const s of list.data) hasFields(s, { id: 'string', name: 'string', created_at: 'string' }, 'Segment');
    assert.deepEqual(list.data.map((s) => s.name).sort(), ['Temporary', 'Weekly news']);
    // The same records on the SPEC's surface.
    const spec = await request(server.httpUrl, 'GET', `/v1/audiences/${segmentId}`, { key });
    assert.equal(spec.body.name, 'Weekly news', show(spec));
    const removed = ok(await resend.segments.remove(other.id), 'segments.remove');
    assert.deepEqual(removed, { object: 'segment', id: other.id, deleted: true });
    failed(await resend.segments.get(other.id), 404, 'not_found');
  });

  it('creates contacts in segments with properties; reads by id or email; updates; lists with cursors', async () => {
    const created = ok(
      await resend.contacts.create({
        email: 'ann@example.org',
        firstName: 'Ann',
        lastName: 'Lee',
        properties: { plan: 'pro', seats: 3 },
        segments: [{ id: segmentId }],
      }),
      'contacts.create',
    );
    hasFields(created, { object: 'string', id: 'string' }, 'CreateContactResponseSuccess');
    const byEmail = ok(await resend.contacts.get({ email: 'ann@example.org' }), 'contacts.get by email');
    hasFields(
      byEmail,
      {
        object: 'string',
        id: 'string',
        email: 'string',
        created_at: 'string',
        first_name: 'string|null',
        last_name: 'string|null',
        unsubscribed: 'boolean',
        properties: 'object',
      },
      'GetContactResponseSuccess',
    );
    assert.equal(byEmail.id, created.id);
    assert.deepEqual(byEmail.properties, {
      plan: { type: 'string', value: 'pro' },
      seats: { type: 'number', value: 3 },
    });
    // The same record is a subscriber on the SPEC's surface, its properties its metadata.
    const subscriber = await request(server.httpUrl, 'GET', `/v1/subscribers/${created.id}`, { key });
    assert.deepEqual(
      [subscriber.body.email, subscriber.body.status, subscriber.body.metadata],
      ['ann@example.org', 'subscribed', { plan: 'pro', seats: 3 }],
    );

    ok(
      await resend.contacts.update({ id: created.id, firstName: 'Annie', properties: { seats: 5, plan: null } }),
      'contacts.update',
    );
    const updated = ok(await resend.contacts.get(created.id));
    assert.equal(updated.first_name, 'Annie');
    assert.equal(updated.last_name, 'Lee', 'fields not given stay');
    assert.deepEqual(
      updated.properties,
      { seats: { type: 'number', value: 5 } },
      'null removes a property, the others merge',
    );

    for (const [email, first] of [
      ['bob@example.org', 'Bob'],
      ['cat@example.org', 'Cat'],
      ['dan@example.org', 'Dan'],
      ['eve@example.org', 'Eve'],
    ] as const) {
      ok(
        await resend.contacts.create({ email, firstName: first, segments: [{ id: segmentId }] }),
        `contacts.create ${email}`,
      );
    }
    // A contact outside the segment, created through the deprecated audience-less path.
    ok(await resend.contacts.create({ email: 'out@example.org' }));

    const page1 = ok(await resend.contacts.list({ segmentId, limit: 2 }), 'contacts.list in a segment');
    assert.equal(page1.object, 'list');
    assert.equal(page1.data.length, 2);
    assert.equal(page1.has_more, true);
    for (const c of page1.data)
      hasFields(
        c,
        {
          id: 'string',
          email: 'string',
          created_at: 'string',
          first_name: 'string|null',
          last_name: 'string|null',
          unsubscribed: 'boolean',
        },
        'Contact',
      );
    const seen = [...page1.data];
    let cursor = page1.data.at(-1)!.id;
    for (let i = 0; i < 5; i++) {
      const next = ok(await resend.contacts.list({ segmentId, limit: 2, after: cursor }));
      seen.push(...next.data);
      if (!next.has_more) break;
      cursor = next.data.at(-1)!.id;
    }
    assert.deepEqual(seen.map((c) => c.email).sort(), [
      'ann@example.org',
      'bob@example.org',
      'cat@example.org',
      'dan@example.org',
      'eve@example.org',
    ]);
    const all = ok(await resend.contacts.list({ limit: 100 }), 'contacts.list');
    assert.equal(all.data.length, 6);

    const segments = ok(await resend.contacts.segments.list({ email: 'ann@example.org' }), 'contacts.segments.list');
    assert.deepEqual(
      segments.data.map((s) => s.id),
      [segmentId],
    );
    ok(await resend.contacts.segments.add({ email: 'out@example.org', segmentId }), 'contacts.segments.add');
    const removedFrom = ok(
      await resend.contacts.segments.remove({ email: 'out@example.org', segmentId }),
      'contacts.segments.remove',
    );
    assert.equal(removedFrom.deleted, true);

    failed(
      await resend.contacts.create({
        email: 'x@example.org',
        segments: [{ id: '0190a4b2-0000-7000-8000-000000000000' }],
      }),
      400,
      'validation_error',
      /^segments\[0\]\.id:/,
    );
    failed(await resend.contacts.create({ email: 'not an address' }), 400, 'validation_error', /^email:/);
    assert.equal(
      (await request(server.httpUrl, 'GET', '/v1/subscribers?email=x@example.org', { key })).body.pagination.total,
      0,
      'a refused contact is not created half-way',
    );
  });

  it('keeps the deprecated audience-scoped contact calls working', async () => {
    const created = ok(
      await resend.contacts.create({ audienceId: segmentId, email: 'old@example.org', firstName: 'Old' }),
      'contacts.create with audienceId',
    );
    const got = ok(
      await resend.contacts.get({ audienceId: segmentId, email: 'old@example.org' }),
      'contacts.get with audienceId',
    );
    assert.equal(got.id, created.id);
    ok(await resend.contacts.update({ audienceId: segmentId, id: created.id, lastName: 'Timer' }));
    assert.equal(ok(await resend.contacts.get(created.id)).last_name, 'Timer');
    ok(await resend.contacts.remove({ audienceId: segmentId, id: created.id }), 'contacts.remove with audienceId');
    failed(await resend.contacts.get({ audienceId: segmentId, id: created.id }), 404, 'not_found');
    assert.equal(
      ok(await resend.contacts.get(created.id)).email,
      'old@example.org',
      'the contact leaves the audience, and stays',
    );
    const removed = ok(await resend.contacts.remove(created.id), 'contacts.remove');
    assert.equal(removed.deleted, true);
    failed(await resend.contacts.get(created.id), 404, 'not_found');
  });

  it('creates topics; contacts opt in and out of them', async () => {
    const created = ok(
      await resend.topics.create({ name: 'Product news', description: 'What we ship', defaultSubscription: 'opt_in' }),
      'topics.create',
    );
    topicId = created.id;
    const got = ok(await resend.topics.get(topicId), 'topics.get');
    hasFields(got, { id: 'string', name: 'string', default_subscription: 'string', created_at: 'string' }, 'Topic');
    ok(await resend.topics.update({ id: topicId, description: 'What we shipped' }), 'topics.update');
    const list = ok(await resend.topics.list(), 'topics.list');
    assert.deepEqual(
      list.data.map((t) => t.description),
      ['What we shipped'],
    );

    ok(
      await resend.contacts.topics.update({
        email: 'cat@example.org',
        topics: [{ id: topicId, subscription: 'opt_out' }],
      }),
      'contacts.topics.update',
    );
    const cat = ok(await resend.contacts.topics.list({ email: 'cat@example.org' }), 'contacts.topics.list');
    assert.deepEqual(
      cat.data.map((t) => [t.id, t.subscription]),
      [[topicId, 'opt_out']],
    );
    const bob = ok(await resend.contacts.topics.list({ email: 'bob@example.org' }));
    assert.deepEqual(
      bob.data.map((t) => t.subscription),
      ['opt_in'],
      "the topic's default for a contact that never chose",
    );
    failed(
      await resend.contacts.topics.update({
        email: 'cat@example.org',
        topics: [{ id: topicId, subscription: 'maybe' as 'opt_in' }],
      }),
      400,
      'validation_error',
    );
  });

  it('sends a broadcast to every subscribed contact of its segment and topic, once, through the campaign path', async () => {
    // dan unsubscribes, eve is suppressed, cat opted out of the topic: ann and bob remain.
    ok(await resend.contacts.update({ email: 'dan@example.org', unsubscribed: true }));
    ok(await resend.suppressions.add({ email: 'eve@example.org' }));

    const draft = ok(
      await resend.broadcasts.create({
        name: 'Spring',
        segmentId,
        topicId,
        from: 'Shop <news@shop.example>',
        subject: 'Spring for {{{FIRST_NAME|you}}}',
        html: '<html><body><p>Hello {{{FIRST_NAME|there}}} ({{{contact.seats|1}}} seats)</p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Leave</a></body></html>',
        text: 'Hello {{{FIRST_NAME|there}}}',
        replyTo: 'help@shop.example',
        previewText: 'Our spring collection',
      }),
      'broadcasts.create',
    );
    hasFields(draft, { id: 'string' }, 'CreateBroadcastResponseSuccess');
    const got = ok(await resend.broadcasts.get(draft.id), 'broadcasts.get');
    hasFields(
      got,
      {
        object: 'string',
        id: 'string',
        name: 'string',
        segment_id: 'string|null',
        audience_id: 'string|null',
        from: 'string|null',
        subject: 'string|null',
        reply_to: 'array|null',
        preview_text: 'string|null',
        status: 'string',
        created_at: 'string',
        scheduled_at: 'string|null',
        sent_at: 'string|null',
        html: 'string|null',
        text: 'string|null',
      },
      'GetBroadcastResponseSuccess',
    );
    assert.equal(got.status, 'draft');
    ok(await resend.broadcasts.update(draft.id, { name: 'Spring sale' }), 'broadcasts.update');
    assert.equal(mx.messages.length, 0, 'a draft sends nothing');

    const sent = ok(await resend.broadcasts.send(draft.id), 'broadcasts.send');
    assert.equal(sent.id, draft.id);
    failed(await resend.broadcasts.update(draft.id, { name: 'Too late' }), 409, 'validation_error', /only a draft/);
    const done = await eventually(
      async () => {
        const b = ok(await resend.broadcasts.get(draft.id));
        return b.status === 'sent' ? b : undefined;
      },
      20_000,
      'the broadcast to be sent',
    );
    assert.equal(done.name, 'Spring sale');
    const counts = (done as unknown as { counts: Record<string, number> }).counts;
    assert.equal(counts.delivered, 2);

    assert.deepEqual(
      mx.messages.flatMap((m) => m.to).sort(),
      ['ann@example.org', 'bob@example.org'],
      'each subscribed contact in the topic once; no unsubscribed, suppressed or opted-out one',
    );
    const annRaw = mx.messages.find((m) => m.to.includes('ann@example.org'))!.raw;
    const ann = await simpleParser(annRaw);
    assert.equal(ann.subject, 'Spring for Annie');
    assert.match(ann.html || '', /Hello Annie \(5 seats\)/);
    assert.match(
      ann.html || '',
      /<body><div style="display:none[^"]*">Our spring collection<\/div>/,
      'the preview text leads the body, hidden',
    );
    assert.match(ann.text || '', /Hello Annie/);
    assert.equal(ann.replyTo?.value[0]?.address, 'help@shop.example');
    const bob = await simpleParser(mx.messages.find((m) => m.to.includes('bob@example.org'))!.raw);
    assert.match(bob.html || '', /Hello Bob \(1 seats\)/, 'a missing property takes its fallback');
    const unsubscribe = headerOf(annRaw, 'List-Unsubscribe').replace(/^<|>$/g, '');
    assert.match(unsubscribe, /^http:\/\/127\.0\.0\.1:1\/u\//);
    assert.ok(
      (ann.html || '').includes(unsubscribe.replace(/&/g, '&amp;')),
      'RESEND_UNSUBSCRIBE_URL is the one-click link',
    );
    assert.match(
      ann.html || '',
      /<img src="http:\/\/127\.0\.0\.1:1\/t\/o\/[^"]+"/,
      'opens are tracked, as for every campaign',
    );
    const sentEvents = await server.runtime.store.db
      .selectFrom('events')
      .innerJoin('emails', 'emails.id', 'events.email_id')
      .select(['events.type'])
      .where('emails.campaign_id', '=', draft.id)
      .where('events.type', '=', 'email.sent')
      .execute();
    assert.equal(sentEvents.length, 2, 'each message has its events');
    const dkim = await verifyDkim(annRaw, dns);
    assert.ok(dkim.some((r: { status: { result: string } }) => r.status.result === 'pass'));

    // One implementation: the broadcast is a campaign on the SPEC's surface.
    const campaign = await request(server.httpUrl, 'GET', `/v1/campaigns/${draft.id}`, { key });
    assert.equal(campaign.body.status, 'sent', show(campaign));
    assert.equal(campaign.body.audience_id, segmentId);

    const list = ok(await resend.broadcasts.list(), 'broadcasts.list');
    assert.equal(list.object, 'list');
    for (const b of list.data)
      hasFields(
        b,
        {
          id: 'string',
          name: 'string',
          audience_id: 'string|null',
          segment_id: 'string|null',
          status: 'string',
          created_at: 'string',
          scheduled_at: 'string|null',
          sent_at: 'string|null',
        },
        'ListBroadcasts item',
      );

    // Unsubscribing through the link stops the next broadcast.
    const oneClick = await fetch(`${server.httpUrl}${new URL(unsubscribe).pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    assert.equal(oneClick.status, 200);
    assert.equal(ok(await resend.contacts.get({ email: 'ann@example.org' })).unsubscribed, true);
  });

  it('schedules, cancels back to draft, duplicates, deletes; sends at once with send: true', async () => {
    const scheduled = ok(
      await resend.broadcasts.create({
        segmentId,
        from: 'news@shop.example',
        subject: 'Later',
        html: '<p>Later</p>',
        send: true,
        scheduledAt: 'in 1 hour',
      }),
      'broadcasts.create scheduled',
    );
    const got = ok(await resend.broadcasts.get(scheduled.id));
    assert.equal(got.status, 'scheduled');
    assert.ok(Math.abs(Date.parse(got.scheduled_at!) - (Date.now() + 3600_000)) < 60_000);
    failed(
      await resend.broadcasts.remove(sentOf(await resend.broadcasts.list())),
      409,
      'validation_error',
      /only a draft/,
    );
    const cancelled = ok(await resend.broadcasts.cancel(scheduled.id), 'broadcasts.cancel');
    assert.deepEqual([cancelled.id, cancelled.object], [scheduled.id, 'broadcast']);
    assert.equal(
      ok(await resend.broadcasts.get(scheduled.id)).status,
      'draft',
      'a scheduled broadcast goes back to draft',
    );
    failed(await resend.broadcasts.cancel(scheduled.id), 409, 'validation_error');

    const copy = ok(await resend.broadcasts.duplicate(scheduled.id), 'broadcasts.duplicate');
    const copied = ok(await resend.broadcasts.get(copy.id));
    assert.deepEqual([copied.status, copied.subject, copied.segment_id], ['draft', 'Later', segmentId]);
    const removed = ok(await resend.broadcasts.remove(copy.id), 'broadcasts.remove');
    assert.deepEqual(removed, { object: 'broadcast', id: copy.id, deleted: true });
    ok(await resend.broadcasts.remove(scheduled.id));

    mx.messages.length = 0;
    const now = ok(
      await resend.broadcasts.create({
        audienceId: segmentId,
        from: 'news@shop.example',
        subject: 'Now',
        text: 'Plain words only',
        send: true,
      }),
      'broadcasts.create send: true',
    );
    await eventually(
      async () => (ok(await resend.broadcasts.get(now.id)).status === 'sent' ? true : undefined),
      120_000,
      'sent',
    );
    // ann unsubscribed, dan too, eve is suppressed; no topic this time: bob and cat.
    assert.deepEqual(mx.messages.flatMap((m) => m.to).sort(), ['bob@example.org', 'cat@example.org']);
    const plain = await simpleParser(mx.messages[0]!.raw);
    assert.equal(plain.html, false, 'a text-only broadcast has no HTML part');
    assert.match(plain.text || '', /Plain words only/);

    failed(
      await resend.broadcasts.create({ from: 'news@shop.example', subject: 's', html: 'h' } as never),
      400,
      'validation_error',
      /^segment_id:/,
    );
    failed(
      await resend.broadcasts.create({ segmentId, from: 'news@elsewhere.example', subject: 's', html: 'h' }),
      403,
      'invalid_access',
      /from_email/,
    );
    failed(
      await resend.broadcasts.create({
        segmentId,
        from: 'news@shop.example',
        subject: 's',
        html: 'h',
        topicId: '0190a4b2-0000-7000-8000-000000000000',
      }),
      400,
      'validation_error',
      /^topic_id:/,
    );
    const waiting = ok(
      await resend.broadcasts.create({
        segmentId,
        topicId,
        from: 'news@shop.example',
        subject: 'Draft',
        html: '<p>d</p>',
      }),
    );
    failed(await resend.topics.remove(topicId), 409, 'validation_error', /not yet sent/i);
    ok(await resend.broadcasts.remove(waiting.id));
    assert.deepEqual(ok(await resend.topics.remove(topicId), 'topics.remove'), {
      object: 'topic',
      id: topicId,
      deleted: true,
    });
  });

  it('cancels a broadcast mid-send: what was not handed to delivery is cancelled', async () => {
    // A node without delivery: the broadcast's messages wait in the queue, where the test
    // hands two of them to "a worker" as a claim would, then cancels the broadcast.
    const quiet = await startTestServer({ delivery: { enabled: false, dnsServers: [dns.server] } });
    try {
      const quietKey = await quiet.key();
      const client = resendClient(quiet, quietKey);
      await addVerifiedDomain(quiet, dns, 'shop.example');
      const many = ok(await client.segments.create({ name: 'Many' }));
      for (let i = 0; i < 30; i++)
        ok(await client.contacts.create({ email: `m${i}@example.org`, segments: [{ id: many.id }] }));
      const b = ok(
        await client.broadcasts.create({
          segmentId: many.id,
          from: 'news@shop.example',
          subject: 'Many',
          html: '<p>x</p>',
          send: true,
        }),
      );
      await eventually(
        async () =>
          (await request(quiet.httpUrl, 'GET', `/v1/campaigns/${b.id}`, { key: quietKey })).body.counts?.queued === 30
            ? true
            : undefined,
        120_000,
        'queued',
      );
      const db = quiet.runtime.store.db;
      const claimed = await db
        .selectFrom('queue_items')
        .innerJoin('emails', 'emails.id', 'queue_items.email_id')
        .select('queue_items.id')
        .where('emails.campaign_id', '=', b.id)
        .limit(2)
        .execute();
      await db
        .updateTable('queue_items')
        .set({ status: 'sending', lease_owner: 'worker', lease_until: Date.now() + 60_000 })
        .where(
          'id',
          'in',
          claimed.map((c) => c.id),
        )
        .execute();

      const cancelled = ok(await client.broadcasts.cancel(b.id), 'broadcasts.cancel while sending');
      assert.equal(cancelled.id, b.id);
      const after = ok(await client.broadcasts.get(b.id));
      assert.equal(after.status, 'canceled');
      const counts = (after as unknown as { counts: Record<string, number> }).counts;
      assert.equal(counts.cancelled, 28, JSON.stringify(counts));
      const items = await db
        .selectFrom('queue_items')
        .innerJoin('emails', 'emails.id', 'queue_items.email_id')
        .select(['queue_items.status'])
        .where('emails.campaign_id', '=', b.id)
        .execute();
      assert.deepEqual(
        items
          .map((i) => i.status)
          .sort()
          .filter((v, i, a) => a.indexOf(v) === i),
        ['cancelled', 'sending'],
        'the two being delivered are left to finish',
      );
      failed(await client.broadcasts.cancel(b.id), 409, 'validation_error');
      failed(await client.broadcasts.remove(b.id), 409, 'validation_error');
    } finally {
      await quiet.close();
    }
  });
});

/** The id of a broadcast that is not a draft (one already sent). */
function sentOf(list: Awaited<ReturnType<Resend['broadcasts']['list']>>): string {
  return list.data!.data.find((b) => b.status === 'sent')!.id;
}
