import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { Resend } from 'resend';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import type { TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import type { TestMx } from '../helpers/mx-server.js';
import { SMTPServer } from 'smtp-server';
import { emailState } from '../helpers/delivery.js';
import { runRetention } from '../../src/tasks/retention.js';
import { failed, hasFields, ok, publishDomain } from '../helpers/resend.js';
import { manualClock, type TestServer } from '../helpers/server.js';
import { freePort, tampered } from '../helpers/http.js';

const compose = (options: ConstructorParameters<typeof MailComposer>[0]) =>
  new MailComposer({ xMailer: false, ...options }).compile().build();

/**
 * The methods of the `resend` SDK (6.38.0) beyond the ones resend-sdk.test.ts drives, called
 * unchanged against a real server at its root URL (as resend-root.test.ts does), on real
 * objects: mail goes through the loopback MX and the inbound listener.
 */
describe('the Resend SDK, the rest of its methods', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let resend: Resend;
  let key: string;
  const clock = manualClock(Date.parse('2026-11-24T12:00:00Z'));

  before(async () => {
    const port = await freePort();
    rig = await startDeliveringServer({
      delivery: { hostname: 'mx.mailsvc.test', pollInterval: 20, signingThreads: 0 },
      config: { http: { port, publicUrl: `http://127.0.0.1:${port}` }, smtp: { inbound: { enabled: true, port: 0 } } },
      senders: ['acme.test'],
      clock,
    });
    ({ server, dns, mx } = rig);
    routeDomain(dns, 'customer.test', [{ name: 'mx.customer.test', preference: 10, a: ['127.0.0.1'] }]);
    key = await server.key();
    resend = new Resend(key, { baseUrl: server.httpUrl });
  });
  after(async () => {
    await rig?.close();
  });

  describe('emails.receiving.forward', () => {
    let receivedId: string;
    const attachment = Buffer.from('%PDF-1.4 forwarded');

    before(async () => {
      ok(await resend.post('/receiving/routes', { address: 'support@acme.test' }), 'route');
      const raw = await compose({
        from: 'Ann <ann@sender.test>',
        to: 'support@acme.test',
        subject: 'Broken order',
        text: 'My order 42 is broken.\n',
        html: '<p>My order 42 is <b>broken</b>.</p>',
        messageId: '<order-42@sender.test>',
        attachments: [{ filename: 'invoice.pdf', content: attachment, contentType: 'application/pdf' }],
      });
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: server.inboundPort!,
        secure: false,
        tls: { rejectUnauthorized: false },
      });
      const info = await transport.sendMail({ envelope: { from: 'ann@sender.test', to: ['support@acme.test'] }, raw });
      receivedId = /received as ([0-9a-f-]{36})/.exec(info.response)![1]!;
    });

    it('passes the message through: the raw link is signed, fetched without a key, and the forward is delivered', async () => {
      const got = ok(await resend.emails.receiving.get(receivedId), 'emails.receiving.get');
      assert.ok(got.raw, 'raw is present');
      hasFields(got.raw, { download_url: 'string', expires_at: 'string' }, 'raw');
      // The link is the credential: no key, and it expires within the hour.
      const bare = await fetch(got.raw.download_url);
      assert.equal(bare.status, 200);
      assert.equal(bare.headers.get('content-type'), 'message/rfc822');
      assert.equal(Date.parse(got.raw.expires_at), clock.now() + 3600_000);

      const before = mx.messages.length;
      const forwarded = ok(
        await resend.emails.receiving.forward({
          emailId: receivedId,
          to: 'agent@customer.test',
          from: 'Support <support@acme.test>',
        }),
        'emails.receiving.forward',
      );
      hasFields(forwarded, { id: 'string' }, 'ForwardReceivingEmailResponseSuccess');
      const [message] = (await mx.waitFor(before + 1)).slice(before);
      const mail = await simpleParser(message!.raw);
      assert.equal(mail.subject, 'Broken order');
      assert.equal(mail.text?.trim(), 'My order 42 is broken.');
      assert.match(String(mail.html), /<b>broken<\/b>/);
      assert.equal(mail.attachments.length, 1);
      assert.equal(mail.attachments[0]!.filename, 'invoice.pdf');
      assert.ok(mail.attachments[0]!.content.equals(attachment), 'the attachment bytes as received');
    });

    it('wraps the message as an .eml attachment when passthrough is false', async () => {
      const before = mx.messages.length;
      ok(
        await resend.emails.receiving.forward({
          emailId: receivedId,
          to: 'agent@customer.test',
          from: 'support@acme.test',
          passthrough: false,
          text: 'See below.',
        }),
        'emails.receiving.forward (wrapped)',
      );
      const [message] = (await mx.waitFor(before + 1)).slice(before);
      const mail = await simpleParser(message!.raw);
      assert.equal(mail.subject, 'Fwd: Broken order');
      assert.equal(mail.text?.trim(), 'See below.');
      const eml = mail.attachments.find((a) => a.filename === 'forwarded_message.eml');
      assert.ok(eml, 'the original as message/rfc822');
      assert.match(eml.content.toString(), /Message-ID: <order-42@sender\.test>/i);
    });

    it('refuses an expired or tampered link (the forward then fails as the SDK reports it)', async () => {
      const got = ok(await resend.emails.receiving.get(receivedId), 'emails.receiving.get');
      const link = got.raw!.download_url;
      assert.equal((await fetch(tampered(link))).status, 404, 'tampered');
      clock.advance(3600_000);
      assert.equal((await fetch(link)).status, 200, 'at the hour');
      clock.advance(1);
      assert.equal((await fetch(link)).status, 404, 'just over the hour');
      // The SDK's InboundAttachment omits the link; ours carries it, as the attachments routes do.
      const linkOf = (a: unknown) => (a as { download_url: string }).download_url;
      assert.equal((await fetch(linkOf(got.attachments[0]))).status, 404, 'attachment links expire with it');
      const fresh = ok(await resend.emails.receiving.get(receivedId), 'emails.receiving.get');
      assert.equal((await fetch(linkOf(fresh.attachments[0]))).status, 200, 'a fresh read gives fresh links');
      failed(
        await resend.emails.receiving.forward({
          emailId: '00000000-0000-7000-8000-000000000000',
          to: 'a@customer.test',
          from: 'support@acme.test',
        }),
        404,
        'not_found',
      );
    });
  });

  describe('domains.update', () => {
    let plain: SMTPServer;
    const plainMessages: Buffer[] = [];

    before(async () => {
      // An MX that offers no STARTTLS, on another loopback address at the delivery port.
      plain = new SMTPServer({
        authOptional: true,
        disabledCommands: ['AUTH', 'STARTTLS'],
        logger: false,
        onData(stream, _session, cb) {
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            plainMessages.push(Buffer.concat(chunks));
            cb(null);
          });
        },
      });
      await new Promise<void>((resolve) => plain.listen(mx.port, '127.0.0.2', resolve));
      routeDomain(dns, 'plain.test', [{ name: 'mx.plain.test', preference: 10, a: ['127.0.0.2'] }]);
    });
    after(async () => {
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    });
    // The clock stands still: each test starts in fresh rate-limit windows (domains.write: 10 a minute).
    beforeEach(() => clock.advance(61_000));

    it('turns on open and click tracking for transactional mail of one domain', async () => {
      const created = ok(await resend.domains.create({ name: 'tracked.test' }), 'domains.create');
      await publishDomain(server, dns, 'tracked.test');
      ok(await resend.domains.verify(created.id), 'domains.verify');
      const html = '<p>Hello <a href="https://shop.example/order/42">your order</a></p>';
      const before = mx.messages.length;
      const untracked = ok(
        await resend.emails.send({ from: 'shop@tracked.test', to: 'a@customer.test', subject: 'Untracked', html }),
        'emails.send',
      );
      const updated = ok(
        await resend.domains.update({ id: created.id, openTracking: true, clickTracking: true }),
        'domains.update',
      );
      hasFields(updated, { id: 'string', object: 'string' }, 'UpdateDomainsResponseSuccess');
      assert.equal(updated.id, created.id);
      assert.equal(updated.object, 'domain');
      const got = ok(await resend.domains.get(created.id), 'domains.get');
      assert.equal(got.open_tracking, true);
      assert.equal(got.click_tracking, true);
      const tracked = ok(
        await resend.emails.send({ from: 'shop@tracked.test', to: 'a@customer.test', subject: 'Tracked', html }),
        'emails.send',
      );
      const arrived = (await mx.waitFor(before + 2)).slice(before);
      const bySubject = async (subject: string) => {
        for (const m of arrived) {
          const mail = await simpleParser(m.raw);
          if (mail.subject === subject) return String(mail.html);
        }
        return assert.fail(`no ${subject}`);
      };
      assert.ok(untracked.id && tracked.id);
      const plainHtml = await bySubject('Untracked');
      assert.doesNotMatch(plainHtml, /\/t\/[oc]\//, 'transactional mail is untracked by default');
      const trackedHtml = await bySubject('Tracked');
      assert.match(trackedHtml, /\/t\/o\//, 'the open pixel');
      assert.match(trackedHtml, /\/t\/c\//, 'the link goes through the click tracker');
      // The request's own word still wins.
      const before2 = mx.messages.length;
      await server.runtime.services.domains.update(server.workspaceId, 'tracked.test', { click_tracking: null });
      ok(await resend.domains.update({ id: created.id, openTracking: false }), 'domains.update');
      const back = ok(await resend.domains.get(created.id), 'domains.get');
      assert.equal(back.open_tracking, false);
      ok(
        await resend.emails.send({ from: 'shop@tracked.test', to: 'a@customer.test', subject: 'Off again', html }),
        'emails.send',
      );
      const [last] = (await mx.waitFor(before2 + 1)).slice(before2);
      assert.doesNotMatch(String((await simpleParser(last!.raw)).html), /\/t\/[oc]\//);
    });

    it('enforced TLS: the mail of the domain is not delivered to an MX without STARTTLS; opportunistic, it is', async () => {
      const created = ok(await resend.domains.create({ name: 'strict.test', tls: 'enforced' }), 'domains.create');
      await publishDomain(server, dns, 'strict.test');
      ok(await resend.domains.verify(created.id), 'domains.verify');
      assert.equal(
        (ok(await resend.domains.get(created.id), 'domains.get') as unknown as { tls: string }).tls,
        'enforced',
      );
      const sent = ok(
        await resend.emails.send({
          from: 'a@strict.test',
          to: 'b@plain.test',
          subject: 'Over TLS only',
          text: 'secret',
        }),
        'emails.send',
      );
      const state = await eventually(async () => {
        const s = await emailState(server.runtime.store.db, sent.id);
        return s.attempts.length > 0 ? s : undefined;
      });
      assert.equal(plainMessages.length, 0, 'nothing went out in the clear');
      // The MX does not know STARTTLS: the attempt stops there, to be retried.
      assert.equal(state.attempts[0]!.outcome, 'deferred', JSON.stringify(state.attempts[0]));

      ok(await resend.domains.update({ id: created.id, tls: 'opportunistic' }), 'domains.update');
      // The delivery workers read a domain's settings once a minute.
      clock.advance(61_000);
      const other = ok(
        await resend.emails.send({
          from: 'a@strict.test',
          to: 'b@plain.test',
          subject: 'Opportunistic',
          text: 'plain',
        }),
        'emails.send',
      );
      await eventually(async () => plainMessages.some((m) => m.toString().includes('Subject: Opportunistic')));
      // The MX has it; the attempt is recorded a moment later.
      const delivered = await eventually(async () => {
        const s = await emailState(server.runtime.store.db, other.id);
        return s.attempts.some((a) => a.outcome === 'delivered') ? s : undefined;
      });
      assert.equal(
        delivered.attempts.find((a) => a.outcome === 'delivered')!.tls,
        0,
        'in the clear, as the MX offers nothing else',
      );
    });

    it('the return-path subdomain given on create is published and used as the envelope sender', async () => {
      const created = ok(
        await resend.domains.create({ name: 'bounce.test', customReturnPath: 'mail' }),
        'domains.create',
      );
      const spf = created.records.filter((r) => r.record === 'SPF');
      assert.ok(spf.length > 0 && spf.every((r) => r.name === 'mail.bounce.test'), JSON.stringify(spf));
      await publishDomain(server, dns, 'bounce.test');
      ok(await resend.domains.verify(created.id), 'domains.verify');
      const before = mx.messages.length;
      ok(
        await resend.emails.send({ from: 'a@bounce.test', to: 'c@customer.test', subject: 'Return path', text: 'x' }),
        'emails.send',
      );
      const [message] = (await mx.waitFor(before + 1)).slice(before);
      assert.match(message!.from, /^b-[0-9a-f]{32}-[0-9a-f]+@mail\.bounce\.test$/);
    });

    it('validates: a tracking subdomain of 63 characters is taken, 64 is not; unknown values and domains are refused', async () => {
      const { id } = ok(await resend.domains.get('tracked.test'), 'domains.get');
      ok(await resend.domains.update({ id, trackingSubdomain: 'a'.repeat(63) }), '63');
      assert.equal(ok(await resend.domains.get(id), 'domains.get').tracking_subdomain, 'a'.repeat(63));
      failed(await resend.domains.update({ id, trackingSubdomain: 'a'.repeat(64) }), 400, 'validation_error');
      failed(await resend.domains.update({ id, trackingSubdomain: '-bad' }), 400, 'validation_error');
      failed(await resend.domains.update({ id, tls: 'sometimes' as 'enforced' }), 400, 'validation_error');
      failed(await resend.domains.update({ id, capabilities: { sending: 'disabled' } }), 400, 'validation_error');
      failed(
        await resend.domains.update({ id: '00000000-0000-7000-8000-000000000000', openTracking: true }),
        404,
        'not_found',
      );
    });
  });

  describe('broadcasts.recipients and broadcasts.clickedLinks', () => {
    let broadcastId: string;
    const people = ['ann@customer.test', 'bob@customer.test', 'cat@customer.test'];

    before(async () => {
      clock.advance(61_000);
      const segment = ok(await resend.segments.create({ name: 'Readers' }), 'segments.create');
      for (const email of people)
        ok(await resend.contacts.create({ email, segments: [{ id: segment.id }] }), 'contacts.create');
      const before = mx.messages.length;
      const created = ok(
        await resend.broadcasts.create({
          segmentId: segment.id,
          from: 'news@acme.test',
          subject: 'News',
          html: '<p><a href="https://shop.example/a">A</a> <a href="https://shop.example/b">B</a></p>',
          send: true,
        }),
        'broadcasts.create',
      );
      broadcastId = created.id;
      const arrived = (await mx.waitFor(before + people.length, 20_000)).slice(before);
      const linksOf = async (to: string) => {
        const html = String((await simpleParser(arrived.find((m) => m.to.includes(to))!.raw)).html);
        return [...html.matchAll(/href="([^"]*\/t\/c\/[^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
      };
      // ann clicks A twice and B once; bob clicks A once; cat clicks nothing.
      const [annA, annB] = await linksOf('ann@customer.test');
      const [bobA] = await linksOf('bob@customer.test');
      // The engagement rules count a click seconds after delivery as a person's.
      clock.advance(120_000);
      for (const url of [annA!, annA!, annB!, bobA!]) {
        const res = await fetch(url, {
          redirect: 'manual',
          headers: { 'user-agent': 'Mozilla/5.0 (Macintosh) Safari/605.1.15' },
        });
        assert.equal(res.status, 302, url);
      }
    });

    it('lists recipients by event type with the fields the SDK declares', async () => {
      // The MX has the messages; their delivery is recorded a moment later.
      const delivered = await eventually(async () => {
        const list = ok(
          await resend.broadcasts.recipients(broadcastId, { type: 'delivered' }),
          'broadcasts.recipients delivered',
        );
        return list.data.length === people.length ? list : undefined;
      });
      assert.equal(delivered.object, 'list');
      assert.equal(delivered.has_more, false);
      assert.deepEqual(delivered.data.map((r) => r.email).sort(), people);
      for (const r of delivered.data)
        hasFields(r, { id: 'string', contact_id: 'string|null', email: 'string' }, 'BroadcastRecipient');
      assert.ok(
        delivered.data.every((r) => typeof r.contact_id === 'string'),
        'each is a contact',
      );

      const clicked = ok(
        await resend.broadcasts.recipients(broadcastId, { type: 'clicked' }),
        'broadcasts.recipients clicked',
      );
      assert.deepEqual(clicked.data.map((r) => r.email).sort(), ['ann@customer.test', 'bob@customer.test']);
      const ann = clicked.data.find((r) => r.email === 'ann@customer.test')!;
      hasFields(
        ann,
        { id: 'string', contact_id: 'string|null', email: 'string', count: 'number', clicked_links: 'array' },
        'BroadcastRecipient<clicked>',
      );
      assert.equal(ann.count, 3);
      assert.deepEqual(ann.clicked_links, [
        { url: 'https://shop.example/a', clicks: 2 },
        { url: 'https://shop.example/b', clicks: 1 },
      ]);

      const onlyBob = ok(
        await resend.broadcasts.recipients(broadcastId, { type: 'clicked', email: 'BOB@customer.test' }),
        'email filter',
      );
      assert.deepEqual(
        onlyBob.data.map((r) => r.email),
        ['bob@customer.test'],
      );
      assert.deepEqual(ok(await resend.broadcasts.recipients(broadcastId, { type: 'bounced' }), 'bounced').data, []);

      // Pages: one at a time, oldest first, following the cursor.
      const first = ok(await resend.broadcasts.recipients(broadcastId, { type: 'delivered', limit: 2 }), 'page 1');
      assert.equal(first.data.length, 2);
      assert.equal(first.has_more, true);
      const second = ok(
        await resend.broadcasts.recipients(broadcastId, { type: 'delivered', limit: 2, after: first.data[1]!.id }),
        'page 2',
      );
      assert.equal(second.data.length, 1);
      assert.equal(second.has_more, false);
      assert.deepEqual([...first.data, ...second.data].map((r) => r.email).sort(), people);

      failed(await resend.broadcasts.recipients(broadcastId, { type: 'read' as 'sent' }), 400, 'validation_error');
      failed(
        await resend.broadcasts.recipients(broadcastId, { type: 'sent', bounceType: 'permanent' as never }),
        400,
        'validation_error',
      );
      failed(
        await resend.broadcasts.recipients('00000000-0000-7000-8000-000000000000', { type: 'sent' }),
        404,
        'not_found',
      );
    });

    it('lists the clicked links with clicks and unique clicks', async () => {
      const links = ok(await resend.broadcasts.clickedLinks(broadcastId), 'broadcasts.clickedLinks');
      assert.equal(links.object, 'list');
      for (const l of links.data)
        hasFields(
          l,
          { id: 'string', url: 'string', clicks: 'number', unique_clicks: 'number' },
          'BroadcastClickedLink',
        );
      assert.deepEqual(
        links.data.map(({ url, clicks, unique_clicks }) => ({ url, clicks, unique_clicks })),
        [
          { url: 'https://shop.example/a', clicks: 3, unique_clicks: 2 },
          { url: 'https://shop.example/b', clicks: 1, unique_clicks: 1 },
        ],
      );
      const one = ok(await resend.broadcasts.clickedLinks(broadcastId, { limit: 1 }), 'limit 1');
      assert.equal(one.data.length, 1);
      assert.equal(one.has_more, true);
      const rest = ok(await resend.broadcasts.clickedLinks(broadcastId, { limit: 1, after: one.data[0]!.id }), 'after');
      assert.deepEqual(
        rest.data.map((l) => l.url),
        ['https://shop.example/b'],
      );
      assert.equal(rest.has_more, false);
      failed(await resend.broadcasts.clickedLinks('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
    });
  });

  describe('emails.share', () => {
    it('gives an unguessable link to the rendered message that expires; viewing it records no open or click', async () => {
      clock.advance(61_000);
      const html = '<p>Your order <a href="https://shop.example/o/42">#42</a></p><script>alert(1)</script>';
      const sent = ok(
        await resend.emails.send({
          from: 'shop@tracked.test',
          to: 'ann@customer.test',
          subject: 'Order #42 <shipped>',
          html,
        }),
        'emails.send',
      );
      const shared = ok(await resend.emails.share(sent.id), 'emails.share');
      hasFields(shared, { object: 'string', id: 'string', url: 'string' }, 'ShareEmailResponseSuccess');
      assert.equal(shared.object, 'email');
      assert.equal(shared.id, sent.id);
      assert.match(shared.url, new RegExp(`^${server.httpUrl}/s/[A-Za-z0-9_-]{20,}\\.[A-Za-z0-9_-]{16,}$`));
      assert.equal(
        Date.parse((shared as unknown as { expires_at: string }).expires_at),
        clock.now() + 24 * 3600_000,
        'a day by default',
      );

      const page = await fetch(shared.url);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      const body = await page.text();
      assert.match(body, /<title>Order #42 &lt;shipped&gt;<\/title>/);
      assert.match(body, /srcdoc="[^"]*https:\/\/shop\.example\/o\/42/, 'the link goes straight to its destination');
      assert.doesNotMatch(body, /\/t\/[oc]\//, 'no tracking in the shared copy');
      assert.match(
        body,
        /<iframe sandbox="allow-popups allow-popups-to-escape-sandbox"/,
        'nothing of the message runs',
      );
      const events = (await emailState(server.runtime.store.db, sent.id)).events.map((e) => e.type);
      assert.ok(!events.includes('email.opened'), 'viewing is no open');

      // Limits: 30 days is the longest; a minute the shortest.
      const month = ok(await resend.emails.share(sent.id, { expiresIn: '30d' }), '30d');
      assert.equal(
        Date.parse((month as unknown as { expires_at: string }).expires_at),
        clock.now() + 30 * 24 * 3600_000,
      );
      ok(await resend.emails.share(sent.id, { expiresIn: '720h' }), '720h');
      failed(await resend.emails.share(sent.id, { expiresIn: '721h' }), 400, 'validation_error');
      failed(await resend.emails.share(sent.id, { expiresIn: '31d' }), 400, 'validation_error');
      failed(await resend.emails.share(sent.id, { expiresIn: 'tomorrow' }), 400, 'validation_error');
      const short = ok(await resend.emails.share(sent.id, { expiresIn: '1m' }), '1m');
      clock.advance(60_000);
      assert.equal((await fetch(short.url)).status, 200, 'at the minute');
      clock.advance(1);
      assert.equal((await fetch(short.url)).status, 404, 'just over');
      assert.equal((await fetch(tampered(shared.url))).status, 404, 'tampered');
      failed(await resend.emails.share('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
    });
  });

  describe('usage.get', () => {
    it("counts today's and this month's mail, contacts, segments, broadcasts and domains", async () => {
      const usage = ok(await resend.usage.get(), 'usage.get');
      assert.equal(usage.object, 'usage');
      for (const period of [usage.emails.daily, usage.emails.monthly]) {
        hasFields(
          period,
          { used: 'number', limit: 'number', sent: 'number', received: 'number', resets_at: 'string' },
          'usage period',
        );
        assert.equal(period.used, period.sent + period.received);
      }
      hasFields(usage.contacts, { used: 'number', limit: 'number' }, 'contacts');
      hasFields(usage.segments, { used: 'number', limit: 'number|null' }, 'segments');
      hasFields(usage.broadcasts, { used: 'number', limit: 'object|null' }, 'broadcasts');
      hasFields(
        usage.ai_credits,
        { used: 'number', limit: 'number|null', next_increase_at: 'string|null' },
        'ai_credits',
      );
      hasFields(usage.automation_runs, { used: 'number', limit: 'number', resets_at: 'string' }, 'automation_runs');
      hasFields(usage.domains, { used: 'number', limit: 'number|null' }, 'domains');
      hasFields(usage.rate_limit, { limit: 'number', duration: 'string' }, 'rate_limit');
      const db = server.runtime.store.db;
      const n = async (table: 'emails' | 'received_emails') =>
        (
          await db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n;
      // Everything in this test ran on the same (manual) day.
      assert.equal(usage.emails.daily.sent, Number(await n('emails')));
      assert.equal(usage.emails.daily.received, Number(await n('received_emails')));
      assert.ok(usage.emails.daily.received >= 1);
      assert.equal(usage.contacts.used, 3);
      assert.equal(usage.segments.used, 1);
      assert.equal(usage.broadcasts.used, 1);
      assert.equal(usage.domains.used, 4, 'acme, tracked, strict, bounce');
      assert.equal(usage.rate_limit.limit, 5, 'the starter plan sends 5 transactional emails a second');
      assert.equal(usage.emails.daily.limit, (5 + 500) * 86400);
      assert.equal(usage.emails.daily.resets_at, '2026-11-25T00:00:00.000Z');
      assert.equal(usage.emails.monthly.resets_at, '2026-12-01T00:00:00.000Z');

      // One more email counts at once.
      ok(
        await resend.emails.send({
          from: 'shop@tracked.test',
          to: 'ann@customer.test',
          subject: 'One more',
          text: 'x',
        }),
        'emails.send',
      );
      assert.equal(ok(await resend.usage.get(), 'usage.get').emails.daily.sent, usage.emails.daily.sent + 1);
    });
  });

  describe('oauthGrants', () => {
    it("lists the workspace's oat_ tokens as grants and revokes one: it is refused from then on", async () => {
      const made = await server.runtime.services.credentials.createToken({
        name: 'Zapier',
        workspaceId: server.workspaceId,
        scopes: ['emails:read', 'emails:send'],
        expiresInSeconds: null,
      });
      await server.runtime.services.credentials.createToken({
        name: 'Other',
        workspaceId: server.workspaceId,
        scopes: ['domains:read'],
        expiresInSeconds: 3600,
      });
      const token = new Resend(made.secret, { baseUrl: server.httpUrl });
      ok(await token.emails.list(), 'the token works');

      const grants = ok(await resend.oauthGrants.list(), 'oauthGrants.list');
      assert.equal(grants.object, 'list');
      assert.equal(grants.has_more, false);
      assert.deepEqual(
        grants.data.map((g) => g.client.name),
        ['Other', 'Zapier'],
        'newest first',
      );
      for (const g of grants.data) {
        hasFields(
          g,
          {
            id: 'string',
            client_id: 'string',
            scopes: 'array',
            created_at: 'string',
            revoked_at: 'string|null',
            revoked_reason: 'string|null',
            client: 'object',
          },
          'OAuthGrant',
        );
        hasFields(g.client, { name: 'string', logo_uri: 'string|null' }, 'OAuthGrant.client');
      }
      const zapier = grants.data.find((g) => g.client.name === 'Zapier')!;
      assert.deepEqual(zapier.scopes, ['emails:read', 'emails:send']);
      assert.ok(!grants.data.some((g) => g.id === made.credential.id && g.revoked_at !== null));
      const page = ok(await resend.oauthGrants.list({ limit: 1 }), 'limit 1');
      assert.equal(page.data.length, 1);
      assert.equal(page.has_more, true);

      const revoked = ok(await resend.oauthGrants.revoke(zapier.id), 'oauthGrants.revoke');
      hasFields(
        revoked,
        { object: 'string', id: 'string', revoked_at: 'string', revoked_reason: 'string' },
        'RevokeOAuthGrantResponseSuccess',
      );
      assert.equal(revoked.object, 'oauth_grant');
      failed(await token.emails.list(), 401, 'invalid_api_key');
      const after = ok(await resend.oauthGrants.list(), 'oauthGrants.list').data.find((g) => g.id === zapier.id)!;
      assert.equal(after.revoked_at, revoked.revoked_at);
      failed(await resend.oauthGrants.revoke(zapier.id), 404, 'not_found');
      const [apiKey] = await server.runtime.services.credentials.list({
        workspaceId: server.workspaceId,
        oauth: false,
      });
      failed(await resend.oauthGrants.revoke(apiKey!.id), 404, 'not_found', /OAuth grant/);
    });
  });

  describe('events (definitions)', () => {
    it('declares an event with a typed schema, checked when it is sent', async () => {
      clock.advance(61_000);
      const created = ok(
        await resend.events.create({
          name: 'order.placed',
          schema: { plan: 'string', seats: 'number', trial: 'boolean', renews_at: 'date' },
        }),
        'events.create',
      );
      hasFields(created, { object: 'string', id: 'string' }, 'CreateEventResponseSuccess');
      assert.equal(created.object, 'event');
      const byId = ok(await resend.events.get(created.id), 'events.get');
      hasFields(
        byId,
        {
          object: 'string',
          id: 'string',
          name: 'string',
          schema: 'object|null',
          created_at: 'string',
          updated_at: 'string|null',
        },
        'GetEventResponseSuccess',
      );
      assert.deepEqual(byId.schema, { plan: 'string', seats: 'number', trial: 'boolean', renews_at: 'date' });
      assert.equal(byId.updated_at, null);
      assert.equal(ok(await resend.events.get('order.placed'), 'events.get by name').id, created.id);

      ok(
        await resend.events.send({
          event: 'order.placed',
          email: 'ann@customer.test',
          payload: { plan: 'pro', seats: 3, trial: false, renews_at: '2027-01-01', note: 'undeclared fields pass' },
        }),
        'events.send typed',
      );
      failed(
        await resend.events.send({ event: 'order.placed', email: 'ann@customer.test', payload: { seats: '3' } }),
        400,
        'validation_error',
        /payload\.seats: must be a number/,
      );
      failed(
        await resend.events.send({
          event: 'order.placed',
          email: 'ann@customer.test',
          payload: { renews_at: 'next year' },
        }),
        400,
        'validation_error',
        /renews_at/,
      );
      failed(
        await resend.events.send({ event: 'order.placed', email: 'ann@customer.test', payload: { trial: 'no' } }),
        400,
        'validation_error',
        /trial/,
      );

      ok(await resend.events.create({ name: 'signed.up' }), 'events.create without schema');
      const list = ok(await resend.events.list(), 'events.list');
      assert.equal(list.object, 'list');
      assert.deepEqual(
        list.data.map((e) => e.name),
        ['signed.up', 'order.placed'],
        'newest first',
      );
      for (const e of list.data)
        hasFields(
          e,
          { id: 'string', name: 'string', schema: 'object|null', created_at: 'string', updated_at: 'string|null' },
          'Event',
        );
      const page = ok(await resend.events.list({ limit: 1 }), 'events.list limit 1');
      assert.equal(page.has_more, true);

      const updated = ok(await resend.events.update('order.placed', { schema: { seats: 'string' } }), 'events.update');
      hasFields(updated, { object: 'string', id: 'string' }, 'UpdateEventResponseSuccess');
      assert.equal(
        ok(await resend.events.get(created.id), 'events.get').updated_at,
        new Date(clock.now()).toISOString(),
      );
      ok(
        await resend.events.send({ event: 'order.placed', email: 'ann@customer.test', payload: { seats: '3' } }),
        'the new schema',
      );

      const removed = ok(await resend.events.remove(created.id), 'events.remove');
      hasFields(removed, { object: 'string', id: 'string', deleted: 'boolean' }, 'RemoveEventResponseSuccess');
      assert.equal(removed.deleted, true);
      ok(
        await resend.events.send({ event: 'order.placed', email: 'ann@customer.test', payload: { seats: 3 } }),
        'undeclared again: anything goes',
      );
      failed(await resend.events.get(created.id), 404, 'not_found');
    });

    it('limits: 50 schema fields, valid names and types, no duplicates or platform events', async () => {
      clock.advance(61_000);
      const fields = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, 'string' as const]));
      ok(await resend.events.create({ name: 'fifty', schema: fields(50) }), '50 fields');
      failed(
        await resend.events.create({ name: 'fifty-one', schema: fields(51) }),
        400,
        'validation_error',
        /at most 50/,
      );
      failed(
        await resend.events.create({ name: 'bad-type', schema: { a: 'integer' as 'number' } }),
        400,
        'validation_error',
      );
      failed(await resend.events.create({ name: 'bad-field', schema: { '1a': 'string' } }), 400, 'validation_error');
      failed(await resend.events.create({ name: 'fifty' }), 409, 'validation_error', /already exists/);
      failed(await resend.events.create({ name: 'email.sent' }), 400, 'validation_error', /platform event/);
      failed(await resend.events.create({ name: 'has space' }), 400, 'validation_error');
      ok(await resend.events.create({ name: 'n'.repeat(200) }), 'a name of 200 characters');
      failed(await resend.events.create({ name: 'n'.repeat(201) }), 400, 'validation_error', /at most 200/);
      failed(await resend.events.update('nothing.here', { schema: null }), 404, 'not_found');
    });
  });

  describe('contactProperties', () => {
    it('declares typed properties, checks contact writes against them, and fills templates with their fallbacks', async () => {
      clock.advance(61_000);
      const company = ok(
        await resend.contactProperties.create({ key: 'company', type: 'string', fallbackValue: 'your company' }),
        'contactProperties.create',
      );
      hasFields(company, { object: 'string', id: 'string' }, 'CreateContactPropertyResponseSuccess');
      assert.equal(company.object, 'contact_property');
      ok(await resend.contactProperties.create({ key: 'seats', type: 'number', fallbackValue: 1 }), 'number');
      // Ours beside Resend's two types.
      ok(await resend.post('/contact-properties', { key: 'vip', type: 'boolean', fallback_value: false }), 'boolean');
      ok(await resend.post('/contact-properties', { key: 'renews_at', type: 'date' }), 'date');

      const got = ok(await resend.contactProperties.get(company.id), 'contactProperties.get');
      hasFields(
        got,
        {
          object: 'string',
          id: 'string',
          key: 'string',
          createdAt: 'string',
          type: 'string',
          fallbackValue: 'string|null',
        },
        'GetContactPropertyResponse',
      );
      assert.equal(got.key, 'company');
      assert.equal(got.fallbackValue, 'your company');
      const list = ok(await resend.contactProperties.list(), 'contactProperties.list');
      assert.equal(list.object, 'list');
      assert.deepEqual(
        list.data.map((p) => p.key),
        ['renews_at', 'vip', 'seats', 'company'],
      );
      for (const p of list.data)
        hasFields(p, { id: 'string', key: 'string', createdAt: 'string', type: 'string' }, 'ContactProperty');

      // Contact writes keep the declared types.
      ok(
        await resend.contacts.create({ email: 'typed@customer.test', properties: { company: 'Acme', seats: 3 } }),
        'typed contact',
      );
      failed(
        await resend.contacts.create({ email: 'wrong@customer.test', properties: { seats: 'three' } }),
        400,
        'validation_error',
        /properties\.seats: must be a number/,
      );
      failed(
        await resend.contacts.update({ email: 'typed@customer.test', properties: { company: 42 } }),
        400,
        'validation_error',
        /company/,
      );
      failed(
        await resend.post('/contacts', { email: 'wrong@customer.test', properties: { renews_at: 'soon' } }),
        400,
        'validation_error',
      );
      ok(
        await resend.contacts.update({
          email: 'typed@customer.test',
          properties: { seats: 4, free_form: 'undeclared stays free' },
        }),
        'contacts.update',
      );

      const updated = ok(
        await resend.contactProperties.update({ id: company.id, fallbackValue: 'your team' }),
        'contactProperties.update',
      );
      hasFields(updated, { object: 'string', id: 'string' }, 'UpdateContactPropertyResponseSuccess');
      failed(await resend.contactProperties.update({ id: company.id, fallbackValue: 5 }), 400, 'validation_error');

      // The fallback in a broadcast, for a contact without the property.
      const segment = ok(await resend.segments.create({ name: 'Typed' }), 'segments.create');
      ok(await resend.contacts.segments.add({ email: 'typed@customer.test', segmentId: segment.id }), 'add');
      ok(
        await resend.contacts.create({ email: 'plain@customer.test', segments: [{ id: segment.id }] }),
        'plain contact',
      );
      const before = mx.messages.length;
      ok(
        await resend.broadcasts.create({
          segmentId: segment.id,
          from: 'news@acme.test',
          subject: 'For {{{contact.company}}}',
          html: '<p>{{{contact.company}}} has {{{contact.seats}}} seats</p>',
          send: true,
        }),
        'broadcasts.create',
      );
      const arrived = (await mx.waitFor(before + 2, 20_000)).slice(before);
      const mailTo = async (to: string) => simpleParser(arrived.find((m) => m.to.includes(to))!.raw);
      const typed = await mailTo('typed@customer.test');
      assert.equal(typed.subject, 'For Acme');
      assert.match(String(typed.html), /Acme has 4 seats/);
      const plain = await mailTo('plain@customer.test');
      assert.equal(plain.subject, 'For your team');
      assert.match(String(plain.html), /your team has 1 seats/);

      const removed = ok(await resend.contactProperties.remove(company.id), 'contactProperties.remove');
      hasFields(
        removed,
        { object: 'string', id: 'string', deleted: 'boolean' },
        'RemoveContactPropertyResponseSuccess',
      );
      failed(await resend.contactProperties.get(company.id), 404, 'not_found');
      ok(
        await resend.contacts.update({ email: 'typed@customer.test', properties: { company: 42 } }),
        'no longer declared: anything goes',
      );
    });

    it('limits: key of 64 characters, fallback of 1000, 100 properties per workspace; reserved keys and unknown types refused', async () => {
      clock.advance(61_000);
      ok(await resend.contactProperties.create({ key: 'k'.repeat(64), type: 'string' }), '64');
      failed(await resend.contactProperties.create({ key: 'k'.repeat(65), type: 'string' }), 400, 'validation_error');
      ok(
        await resend.contactProperties.create({
          key: 'long_fallback',
          type: 'string',
          fallbackValue: 'x'.repeat(1000),
        }),
        '1000',
      );
      failed(
        await resend.contactProperties.create({
          key: 'too_long_fallback',
          type: 'string',
          fallbackValue: 'x'.repeat(1001),
        }),
        400,
        'validation_error',
      );
      failed(
        await resend.contactProperties.create({ key: 'first_name', type: 'string' }),
        400,
        'validation_error',
        /field of every contact/,
      );
      failed(await resend.contactProperties.create({ key: 'odd', type: 'json' as 'string' }), 400, 'validation_error');
      failed(
        await resend.contactProperties.create({ key: 'seats', type: 'number' }),
        409,
        'validation_error',
        /already exists/,
      );
      const count = ok(await resend.contactProperties.list({ limit: 100 }), 'list').data.length;
      for (let i = count; i < 100; i++) {
        if (i % 50 === 0) clock.advance(1000);
        ok(await resend.contactProperties.create({ key: `p${i}`, type: 'number' }), `property ${i + 1}`);
      }
      clock.advance(1000);
      failed(
        await resend.contactProperties.create({ key: 'one_too_many', type: 'number' }),
        400,
        'validation_error',
        /at most 100/,
      );
      failed(await resend.contactProperties.remove('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
    });
  });

  describe('domains.claims', () => {
    it('takes over a domain another workspace holds once its TXT record is published and the holder is idle', async () => {
      clock.advance(61_000);
      const holderWorkspace = await server.runtime.services.workspaces.create('holder');
      await addVerifiedDomain(server, dns, 'taken.test', holderWorkspace.id);
      const holder = new Resend(await server.key({ workspaceId: holderWorkspace.id }), { baseUrl: server.httpUrl });
      const before = mx.messages.length;
      const last = ok(
        await holder.emails.send({ from: 'old@taken.test', to: 'x@customer.test', subject: 'Still mine', text: 'x' }),
        'holder sends',
      );
      await mx.waitFor(before + 1);
      await eventually(async () => (await emailState(server.runtime.store.db, last.id)).email.status === 'delivered');
      const sentAt = (await emailState(server.runtime.store.db, last.id)).email.created_at;

      const claim = ok(
        await resend.domains.claims.create({ name: 'Taken.test', openTracking: true }),
        'domains.claims.create',
      );
      hasFields(
        claim,
        {
          object: 'string',
          id: 'string',
          name: 'string',
          status: 'string',
          domain_id: 'string|null',
          region: 'string|null',
          record: 'object',
          blocked_reason: 'string|null',
          failure_reason: 'string|null',
          created_at: 'string',
          expires_at: 'string',
        },
        'ClaimDomainResponseSuccess',
      );
      hasFields(claim.record, { type: 'string', name: 'string', value: 'string', ttl: 'string' }, 'DomainClaimRecord');
      assert.equal(claim.object, 'domain_claim');
      assert.equal(claim.name, 'taken.test');
      assert.equal(claim.status, 'pending');
      assert.equal(claim.domain_id, null);
      assert.equal(claim.record.name, '_mailsvc-claim.taken.test');
      assert.match(claim.record.value, /^mailsvc-claim=[A-Za-z0-9_-]{32}$/);

      const unproved = ok(await resend.domains.claims.verify(claim.id), 'domains.claims.verify without the record');
      assert.equal(unproved.status, 'pending');
      assert.match(unproved.failure_reason ?? '', /no TXT record at _mailsvc-claim\.taken\.test/);
      dns.set('_mailsvc-claim.taken.test', 'TXT', ['mailsvc-claim=wrong']);
      assert.match(
        ok(await resend.domains.claims.verify(claim.id), 'wrong value').failure_reason ?? '',
        /does not hold/,
      );
      dns.set('_mailsvc-claim.taken.test', 'TXT', [claim.record.value]);

      // Mail of the holder still to deliver blocks the claim; then its recent sending does.
      const scheduled = ok(
        await holder.emails.send({
          from: 'old@taken.test',
          to: 'x@customer.test',
          subject: 'Later',
          text: 'x',
          scheduledAt: new Date(clock.now() + 3600_000).toISOString(),
        }),
        'scheduled',
      );
      const waiting = ok(await resend.domains.claims.verify(claim.id), 'domains.claims.verify');
      assert.equal(waiting.status, 'blocked');
      assert.equal(waiting.blocked_reason, 'pending_scheduled_emails');
      ok(await holder.emails.cancel(scheduled.id), 'cancel');
      clock.set(sentAt + 24 * 3600_000 - 1);
      const recent = ok(await resend.domains.claims.verify('taken.test'), 'verify by name');
      assert.equal(recent.status, 'blocked');
      assert.equal(recent.blocked_reason, 'recent_owner_activity', 'a day after the last email, less a millisecond');
      // The cancelled email was written later than the sent one: a day after it.
      const cancelledAt = (await emailState(server.runtime.store.db, scheduled.id)).email.created_at;
      clock.set(cancelledAt + 24 * 3600_000);
      const done = ok(await resend.domains.claims.verify(claim.id), 'domains.claims.verify');
      hasFields(
        done,
        {
          object: 'string',
          id: 'string',
          status: 'string',
          domain_id: 'string',
          record: 'object',
          created_at: 'string',
          expires_at: 'string',
        },
        'VerifyDomainClaimResponseSuccess',
      );
      assert.equal(done.status, 'completed');
      assert.equal(done.blocked_reason, null);

      assert.deepEqual(
        ok(await holder.domains.list(), 'holder domains').data.map((d) => d.name),
        [],
        'the holder no longer has it',
      );
      const mine = ok(await resend.domains.get(done.domain_id!), 'domains.get');
      assert.equal(mine.name, 'taken.test');
      assert.equal(mine.status, 'pending', 'to be verified with its own DKIM records');
      assert.equal(mine.open_tracking, true, 'the settings given with the claim');
      const got = ok(await resend.domains.claims.get(done.domain_id!), 'domains.claims.get by domain id');
      hasFields(got, { object: 'string', id: 'string', status: 'string' }, 'GetDomainClaimResponseSuccess');
      assert.equal(got.id, claim.id);
      assert.equal(
        ok(await resend.domains.claims.verify(claim.id), 'again').status,
        'completed',
        'verifying a completed claim changes nothing',
      );
    });

    it('refuses a domain nobody else holds; a claim expires after 7 days; a new claim supersedes the last', async () => {
      clock.advance(61_000);
      failed(
        await resend.domains.claims.create({ name: 'acme.test' }),
        400,
        'validation_error',
        /held by no other workspace/,
      );
      failed(await resend.domains.claims.create({ name: 'not a domain' }), 400, 'validation_error');
      failed(await resend.domains.claims.get('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
      const other = await server.runtime.services.workspaces.create('holder 2');
      await server.runtime.services.domains.add(other.id, { domain: 'held.test' });
      const first = ok(await resend.domains.claims.create({ name: 'held.test' }), 'first claim');
      const second = ok(await resend.domains.claims.create({ name: 'held.test' }), 'second claim');
      assert.equal(ok(await resend.domains.claims.get(first.id), 'first').status, 'superseded');
      failed(await resend.domains.claims.verify(first.id), 409, 'validation_error', /superseded/);
      clock.advance(7 * 24 * 3600_000 - 1);
      assert.equal(ok(await resend.domains.claims.get(second.id), 'just under 7 days').status, 'pending');
      clock.advance(1);
      assert.equal(ok(await resend.domains.claims.get(second.id), 'at 7 days').status, 'expired');
      failed(await resend.domains.claims.verify(second.id), 409, 'validation_error', /expired/);
    });
  });

  // Last of the groups that rely on the day: it moves the clock past the retention period.
  describe('logs', () => {
    it('records every API request with its bodies, secrets and attachment content redacted, and keeps it retention.days', async () => {
      clock.advance(61_000);
      const agent = new Resend(key, { baseUrl: server.httpUrl, userAgent: 'shop-backend/1.0' });
      const sent = ok(
        await resend.emails.send({
          from: 'shop@tracked.test',
          to: 'ann@customer.test',
          subject: 'Logged',
          text: 'x',
          attachments: [{ filename: 'a.txt', content: Buffer.from('top secret file').toString('base64') }],
        }),
        'emails.send',
      );
      const created = ok(await resend.apiKeys.create({ name: 'logged key' }), 'apiKeys.create');
      failed(await resend.emails.get('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
      ok(await agent.domains.list(), 'domains.list');

      const list = await eventually(async () => {
        const l = ok(await resend.logs.list({ limit: 100 }), 'logs.list');
        return l.data.some((e) => e.endpoint === '/domains' && e.method === 'GET') ? l : undefined;
      });
      assert.equal(list.object, 'list');
      for (const e of list.data)
        hasFields(
          e,
          {
            id: 'string',
            created_at: 'string',
            endpoint: 'string',
            method: 'string',
            response_status: 'number',
            user_agent: 'string|null',
          },
          'Log (list)',
        );
      assert.ok(!list.data.some((e) => e.endpoint.startsWith('/logs')), 'reading the logs is not logged');
      const [latest] = list.data;
      assert.equal(latest!.endpoint, '/domains', 'newest first');
      assert.equal(latest!.user_agent, 'shop-backend/1.0');
      assert.equal(latest!.response_status, 200);
      const missing = list.data.find((e) => e.endpoint === '/emails/00000000-0000-7000-8000-000000000000')!;
      assert.equal(missing.response_status, 404);

      const sendLog = ok(
        await resend.logs.get(list.data.find((e) => e.endpoint === '/emails' && e.method === 'POST')!.id),
        'logs.get',
      );
      hasFields(
        sendLog,
        {
          object: 'string',
          id: 'string',
          created_at: 'string',
          endpoint: 'string',
          method: 'string',
          response_status: 'number',
          user_agent: 'string|null',
          request_body: 'object',
          response_body: 'object',
        },
        'GetLogResponseSuccess',
      );
      assert.equal(sendLog.object, 'log');
      const request = sendLog.request_body as {
        subject: string;
        attachments: Array<{ filename: string; content: string }>;
      };
      assert.equal(request.subject, 'Logged');
      assert.equal(request.attachments[0]!.filename, 'a.txt');
      assert.match(request.attachments[0]!.content, /^\[\d+ characters of attachment content\]$/);
      assert.ok(!JSON.stringify(sendLog).includes(Buffer.from('top secret file').toString('base64')));
      assert.equal((sendLog.response_body as { id: string }).id, sent.id);

      const keyLog = ok(
        await resend.logs.get(list.data.find((e) => e.endpoint === '/api-keys' && e.method === 'POST')!.id),
        'logs.get',
      );
      assert.equal((keyLog.response_body as { token: string }).token, '[redacted]');
      assert.ok(!JSON.stringify(keyLog).includes(created.token), 'the new key is not in the log');
      const errorLog = ok(await resend.logs.get(missing.id), 'logs.get');
      assert.equal((errorLog.response_body as { name: string }).name, 'not_found');

      // Pages.
      const first = ok(await resend.logs.list({ limit: 2 }), 'page 1');
      assert.equal(first.data.length, 2);
      assert.equal(first.has_more, true);
      const second = ok(await resend.logs.list({ limit: 2, after: first.data[1]!.id }), 'page 2');
      assert.ok(second.data.every((e) => e.id < first.data[1]!.id));
      failed(await resend.logs.get('00000000-0000-7000-8000-000000000000'), 404, 'not_found');

      // Kept retention.days: at the limit still there, just over it gone.
      const days = server.config.retention.days;
      const at = Date.parse(latest!.created_at);
      clock.set(at + days * 24 * 3600_000);
      await runRetention({ db: server.runtime.store.db, clock, config: server.config });
      assert.ok(ok(await resend.logs.get(latest!.id), 'at retention.days').id);
      clock.set(at + days * 24 * 3600_000 + 1);
      await runRetention({ db: server.runtime.store.db, clock, config: server.config });
      failed(await resend.logs.get(latest!.id), 404, 'not_found');
    });
  });
});
