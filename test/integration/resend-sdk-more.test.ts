import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { Resend } from 'resend';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { SMTPServer } from 'smtp-server';
import { emailState } from '../helpers/delivery.js';
import { failed, hasFields, ok, publishDomain } from '../helpers/resend.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

/** A free loopback port, so http.publicUrl can name the server's own address (the SDK fetches links from it). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

const compose = (options: ConstructorParameters<typeof MailComposer>[0]) => new MailComposer({ xMailer: false, ...options }).compile().build();

/**
 * The methods of the `resend` SDK (6.38.0) beyond the ones resend-sdk.test.ts drives, called
 * unchanged against a real server at its root URL (as resend-root.test.ts does), on real
 * objects: mail goes through the loopback MX and the inbound listener.
 */
describe('the Resend SDK, the rest of its methods', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let resend: Resend;
  let key: string;
  const clock = manualClock(Date.parse('2026-11-24T12:00:00Z'));

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    const port = await freePort();
    server = await startTestServer(
      {
        http: { port, publicUrl: `http://127.0.0.1:${port}` },
        delivery: { dnsServers: [dns.server], port: mx.port, hostname: 'mx.mailsvc.test', pollInterval: 20, signingThreads: 0 },
        smtp: { inbound: { enabled: true, port: 0 } },
      },
      { clock },
    );
    await addVerifiedDomain(server, dns, 'acme.test');
    routeDomain(dns, 'customer.test', [{ name: 'mx.customer.test', preference: 10, a: ['127.0.0.1'] }]);
    key = await server.key();
    resend = new Resend(key, { baseUrl: server.httpUrl });
  });
  after(async () => {
    await server?.close();
    await mx?.close();
    await dns?.close();
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
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port: server.inboundPort!, secure: false, tls: { rejectUnauthorized: false } });
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
      const forwarded = ok(await resend.emails.receiving.forward({ emailId: receivedId, to: 'agent@customer.test', from: 'Support <support@acme.test>' }), 'emails.receiving.forward');
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
        await resend.emails.receiving.forward({ emailId: receivedId, to: 'agent@customer.test', from: 'support@acme.test', passthrough: false, text: 'See below.' }),
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
      assert.equal((await fetch(`${link.slice(0, -2)}xx`)).status, 404, 'tampered');
      clock.advance(3600_000);
      assert.equal((await fetch(link)).status, 200, 'at the hour');
      clock.advance(1);
      assert.equal((await fetch(link)).status, 404, 'just over the hour');
      // The SDK's InboundAttachment omits the link; ours carries it, as the attachments routes do.
      const linkOf = (a: unknown) => (a as { download_url: string }).download_url;
      assert.equal((await fetch(linkOf(got.attachments[0]))).status, 404, 'attachment links expire with it');
      const fresh = ok(await resend.emails.receiving.get(receivedId), 'emails.receiving.get');
      assert.equal((await fetch(linkOf(fresh.attachments[0]))).status, 200, 'a fresh read gives fresh links');
      failed(await resend.emails.receiving.forward({ emailId: '00000000-0000-7000-8000-000000000000', to: 'a@customer.test', from: 'support@acme.test' }), 404, 'not_found');
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
      const untracked = ok(await resend.emails.send({ from: 'shop@tracked.test', to: 'a@customer.test', subject: 'Untracked', html }), 'emails.send');
      const updated = ok(await resend.domains.update({ id: created.id, openTracking: true, clickTracking: true }), 'domains.update');
      hasFields(updated, { id: 'string', object: 'string' }, 'UpdateDomainsResponseSuccess');
      assert.equal(updated.id, created.id);
      assert.equal(updated.object, 'domain');
      const got = ok(await resend.domains.get(created.id), 'domains.get');
      assert.equal(got.open_tracking, true);
      assert.equal(got.click_tracking, true);
      const tracked = ok(await resend.emails.send({ from: 'shop@tracked.test', to: 'a@customer.test', subject: 'Tracked', html }), 'emails.send');
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
      ok(await resend.emails.send({ from: 'shop@tracked.test', to: 'a@customer.test', subject: 'Off again', html }), 'emails.send');
      const [last] = (await mx.waitFor(before2 + 1)).slice(before2);
      assert.doesNotMatch(String((await simpleParser(last!.raw)).html), /\/t\/[oc]\//);
    });

    it('enforced TLS: the mail of the domain is not delivered to an MX without STARTTLS; opportunistic, it is', async () => {
      const created = ok(await resend.domains.create({ name: 'strict.test', tls: 'enforced' }), 'domains.create');
      await publishDomain(server, dns, 'strict.test');
      ok(await resend.domains.verify(created.id), 'domains.verify');
      assert.equal((ok(await resend.domains.get(created.id), 'domains.get') as unknown as { tls: string }).tls, 'enforced');
      const sent = ok(await resend.emails.send({ from: 'a@strict.test', to: 'b@plain.test', subject: 'Over TLS only', text: 'secret' }), 'emails.send');
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
      const other = ok(await resend.emails.send({ from: 'a@strict.test', to: 'b@plain.test', subject: 'Opportunistic', text: 'plain' }), 'emails.send');
      await eventually(async () => plainMessages.some((m) => m.toString().includes('Subject: Opportunistic')));
      const delivered = await emailState(server.runtime.store.db, other.id);
      assert.equal(delivered.attempts.at(-1)!.tls, 0, 'in the clear, as the MX offers nothing else');
    });

    it('the return-path subdomain given on create is published and used as the envelope sender', async () => {
      const created = ok(await resend.domains.create({ name: 'bounce.test', customReturnPath: 'mail' }), 'domains.create');
      const spf = created.records.filter((r) => r.record === 'SPF');
      assert.ok(spf.length > 0 && spf.every((r) => r.name === 'mail.bounce.test'), JSON.stringify(spf));
      await publishDomain(server, dns, 'bounce.test');
      ok(await resend.domains.verify(created.id), 'domains.verify');
      const before = mx.messages.length;
      ok(await resend.emails.send({ from: 'a@bounce.test', to: 'c@customer.test', subject: 'Return path', text: 'x' }), 'emails.send');
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
      failed(await resend.domains.update({ id: '00000000-0000-7000-8000-000000000000', openTracking: true }), 404, 'not_found');
    });
  });
});
