import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { Resend } from 'resend';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { failed, hasFields, ok } from '../helpers/resend.js';
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
});
