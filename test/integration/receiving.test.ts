import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dkimSign } from 'mailauth';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { Resend } from 'resend';
import { Webhook } from 'standardwebhooks';
import { runRetention } from '../../src/tasks/retention.js';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show, tampered } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';
import { openSmtpSession, type SmtpSession } from '../helpers/smtp-session.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const MAX_SIZE = 200 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface SmtpError {
  responseCode?: number;
  response?: string;
}

const idOf = (response: string) =>
  /received as ([0-9a-f-]{36})/.exec(response)?.[1] ?? assert.fail(`no id in ${response}`);

/** A message as a sender's mail program would compose it. */
const compose = (options: ConstructorParameters<typeof MailComposer>[0]) =>
  new MailComposer({ xMailer: false, ...options }).compile().build();

describe('receiving: routes, parsing, authentication, threading', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let receiver: WebhookReceiver;
  let key: string;
  let secret: string;
  let senderKey: string;

  const api = (method: string, path: string, body?: unknown, withKey: string | undefined = key) =>
    request(server.httpUrl, method, path, { key: withKey, body });
  const transport = () =>
    nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.inboundPort!,
      secure: false,
      tls: { rejectUnauthorized: false },
    });
  const sendRaw = (from: string, to: string[], raw: Buffer | string) =>
    transport().sendMail({ envelope: { from, to }, raw });
  const webhookFor = async (subject: string) => {
    const [hook] = await receiver.waitFor(
      1,
      (r) => r.json?.type === 'email.received' && r.json.data.subject === subject,
    );
    return new Webhook(secret).verify(hook!.body, hook!.headers as Record<string, string>) as {
      type: string;
      data: Record<string, any>;
    };
  };

  before(async () => {
    receiver = await startWebhookReceiver();
    rig = await startDeliveringServer({
      delivery: { hostname: 'mx.mailsvc.test', pollInterval: 50, signingThreads: 1 },
      config: {
        http: { publicUrl: 'http://api.mailsvc.test' },
        smtp: { inbound: { enabled: true, port: 0, maxMessageSize: MAX_SIZE, maxRecipients: 4 } },
        webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
      },
      senders: ['acme.test'],
    });
    ({ server, dns, mx } = rig);
    routeDomain(dns, 'customer.test', [{ name: 'mx.customer.test', preference: 10, a: ['127.0.0.1'] }]);
    key = await server.key();
    const hook = await api('POST', '/v1/webhooks', { url: `${receiver.url}/inbound`, events: ['email.received'] });
    assert.equal(hook.status, 201, show(hook));
    secret = hook.body.secret;
    for (const [address, action] of [
      ['support@acme.test', 'webhook'],
      ['reply+*@acme.test', 'webhook'],
      ['archive@acme.test', 'store'],
      ['blocked@acme.test', 'reject'],
    ]) {
      const res = await api('POST', '/v1/receiving/routes', { address, action });
      assert.equal(res.status, 201, show(res));
    }
    // The sending side of the other party: a domain with SPF, DKIM and DMARC, all in the test DNS.
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    senderKey = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    dns.set('s1._domainkey.sender.test', 'TXT', [
      `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
    ]);
    dns.set('sender.test', 'TXT', ['v=spf1 ip4:127.0.0.1 -all']);
    dns.set('_dmarc.sender.test', 'TXT', ['v=DMARC1; p=reject']);
    dns.set('forger.test', 'TXT', ['v=spf1 ip4:192.0.2.1 -all']);
    dns.set('_dmarc.forger.test', 'TXT', ['v=DMARC1; p=reject']);
  });
  after(async () => {
    await rig?.close();
    await receiver.close();
  });

  it('delivers a routed message to the webhook as email.received, with its fields and attachment bytes as sent', async () => {
    const file = randomBytes(60 * 1024);
    const image = randomBytes(2048);
    const raw = await compose({
      from: { name: 'Ann Sender', address: 'ann@sender.test' },
      to: 'support@acme.test',
      cc: 'copy@elsewhere.test',
      replyTo: 'answers@sender.test',
      subject: 'Order 42 is broken — help',
      text: 'Hello,\nmy order is broken.\n',
      html: '<p>Hello, my order is <b>broken</b>.</p><img src="cid:shot@sender.test"><script>alert(1)</script>',
      messageId: '<order-42@sender.test>',
      date: new Date('2026-11-20T10:00:00Z'),
      attachments: [
        { filename: 'invoice.pdf', content: file, contentType: 'application/pdf' },
        { filename: 'shot.png', content: image, contentType: 'image/png', cid: 'shot@sender.test' },
      ],
    });
    const info = await sendRaw('ann@sender.test', ['support@acme.test'], raw);
    assert.match(info.response, /^250 2\.0\.0 Ok: received as /);
    const id = idOf(info.response);

    const event = await webhookFor('Order 42 is broken — help');
    const data = event.data;
    assert.equal(data.email_id, id);
    assert.equal(data.from, 'Ann Sender <ann@sender.test>');
    assert.deepEqual(data.to, ['support@acme.test']);
    assert.deepEqual(data.cc, ['copy@elsewhere.test']);
    assert.deepEqual(data.bcc, []);
    assert.deepEqual(data.reply_to, ['answers@sender.test']);
    assert.deepEqual(data.received_for, ['support@acme.test']);
    assert.equal(data.message_id, '<order-42@sender.test>');
    assert.equal(data.date, '2026-11-20T10:00:00.000Z');
    assert.equal(data.text, 'Hello,\nmy order is broken.\n');
    // HTML exactly as received: the script is still there and cid: links are not rewritten.
    assert.equal(
      data.html,
      '<p>Hello, my order is <b>broken</b>.</p><img src="cid:shot@sender.test"><script>alert(1)</script>',
    );
    assert.equal(data.headers['message-id'], '<order-42@sender.test>');
    assert.equal(data.envelope.mail_from, 'ann@sender.test');
    assert.equal(data.in_reply_to_email_id, null);
    // In the order of the MIME tree: the inline image sits with the HTML, before the file.
    assert.deepEqual(
      data.attachments.map((a: any) => [a.filename, a.content_type, a.content_disposition, a.content_id, a.size]),
      [
        ['shot.png', 'image/png', 'inline', 'shot@sender.test', image.length],
        ['invoice.pdf', 'application/pdf', 'attachment', null, file.length],
      ],
    );

    // The download URL is a signed link under http.publicUrl: the token is the credential.
    const [png, pdf] = data.attachments as Array<{ id: string; download_url: string; expires_at: string }>;
    const path = (url: string) => url.replace('http://api.mailsvc.test', '');
    assert.match(pdf!.download_url, /^http:\/\/api\.mailsvc\.test\/r\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    assert.ok(
      Date.parse(pdf!.expires_at) <= server.runtime.deps.clock.now() + 3600_000,
      'the link works at most an hour',
    );
    const bytes = await fetch(`${server.httpUrl}${path(pdf!.download_url)}`);
    assert.equal(bytes.status, 200);
    assert.equal(bytes.headers.get('content-type'), 'application/pdf');
    assert.match(bytes.headers.get('content-disposition') ?? '', /^attachment; filename="invoice\.pdf"/);
    assert.equal(bytes.headers.get('x-content-type-options'), 'nosniff');
    assert.ok(Buffer.from(await bytes.arrayBuffer()).equals(file), 'attachment bytes as sent');
    const inline = await fetch(`${server.httpUrl}${path(png!.download_url)}`);
    assert.ok(Buffer.from(await inline.arrayBuffer()).equals(image));
    assert.equal(
      (await fetch(`${server.httpUrl}${tampered(path(pdf!.download_url))}`)).status,
      404,
      'a tampered link serves nothing',
    );
    // The API path still serves the bytes, to a key of the workspace only.
    const apiPath = `/v1/emails/receiving/${id}/attachments/${pdf!.id}/content`;
    assert.equal(
      (await fetch(`${server.httpUrl}${apiPath}`, { headers: { authorization: `Bearer ${key}` } })).status,
      200,
    );
    assert.equal((await fetch(`${server.httpUrl}${apiPath}`)).status, 401, 'no key, no bytes');
    const otherWorkspace = await server.runtime.services.workspaces.create('other');
    const otherKey = await server.key({ workspaceId: otherWorkspace.id });
    assert.equal(
      (await fetch(`${server.httpUrl}${apiPath}`, { headers: { authorization: `Bearer ${otherKey}` } })).status,
      404,
      "another workspace's key",
    );

    // The raw source, byte for byte.
    const rawBack = await fetch(`${server.httpUrl}/v1/emails/receiving/${id}/raw`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(rawBack.headers.get('content-type'), 'message/rfc822');
    // SMTP carries lines ending in CRLF: the two bare LFs of the text part arrive as CRLF.
    const onTheWire = Buffer.from(raw.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
    assert.equal(sha256(Buffer.from(await rawBack.arrayBuffer())), sha256(onTheWire));

    // The same through the API's read.
    const read = await api('GET', `/v1/emails/receiving/${id}`);
    assert.equal(read.status, 200, show(read));
    assert.equal(read.body.object, 'email');
    assert.equal(read.body.subject, 'Order 42 is broken — help');
    assert.equal(read.body.html, data.html);
    const rawLink = await fetch(`${server.httpUrl}${path(read.body.raw.download_url)}`);
    assert.equal(rawLink.status, 200, 'the raw link needs no key');
    assert.equal(rawLink.headers.get('content-type'), 'message/rfc822');
    assert.equal(sha256(Buffer.from(await rawLink.arrayBuffer())), sha256(onTheWire));
  });

  it('shows dkim pass for a message signed by its domain, and fail once it is tampered with', async () => {
    const raw = await compose({
      from: 'ann@sender.test',
      to: 'support@acme.test',
      subject: 'Signed',
      text: 'Signed body.\n',
      messageId: '<signed@sender.test>',
    });
    // mailauth reads the keys from signatureData (its typings name only the single-key fields).
    const options = {
      signatureData: [
        { signingDomain: 'sender.test', selector: 's1', privateKey: senderKey, canonicalization: 'relaxed/relaxed' },
      ],
    };
    const { signatures } = await dkimSign(raw, options as unknown as Parameters<typeof dkimSign>[1]);
    assert.match(signatures, /^DKIM-Signature: /);
    const signed = Buffer.concat([Buffer.from(signatures), raw]);
    await sendRaw('ann@sender.test', ['support@acme.test'], signed);
    const good = (await webhookFor('Signed')).data.authentication;
    assert.equal(good.dkim.result, 'pass');
    assert.deepEqual(good.dkim.signatures, [{ result: 'pass', domain: 'sender.test', selector: 's1', aligned: true }]);
    assert.equal(good.spf.result, 'pass');
    assert.equal(good.spf.domain, 'sender.test');
    assert.equal(good.dmarc.result, 'pass');
    assert.equal(good.dmarc.policy, 'reject');
    assert.equal(good.arc, null);
    assert.match(good.header, /dkim=pass/);

    const tampered = Buffer.from(
      signed.toString('latin1').replace('Subject: Signed', 'Subject: Signed, then changed'),
      'latin1',
    );
    await sendRaw('ann@sender.test', ['support@acme.test'], tampered);
    const bad = (await webhookFor('Signed, then changed')).data.authentication;
    assert.equal(bad.dkim.result, 'fail');
    assert.equal(bad.dkim.signatures[0].domain, 'sender.test');
  });

  it('takes mail that fails DMARC with p=reject and records the failure (smtp.inbound.rejectDmarcFailures is off)', async () => {
    const raw = await compose({
      from: 'ceo@forger.test',
      to: 'support@acme.test',
      subject: 'Wire the money',
      text: 'Now.\n',
    });
    await sendRaw('ceo@forger.test', ['support@acme.test'], raw);
    const auth = (await webhookFor('Wire the money')).data.authentication;
    assert.equal(auth.spf.result, 'fail');
    assert.equal(auth.dkim.result, 'none');
    assert.equal(auth.dmarc.result, 'fail');
    assert.equal(auth.dmarc.policy, 'reject');
  });

  it('works with swaks over STARTTLS; a store route keeps the message without an event', async () => {
    if (!existsSync('/usr/bin/swaks')) return assert.fail('swaks is not installed (apt-get install swaks)');
    const attachment = join(server.dir, 'notes.txt');
    const content = Buffer.from(`notes ${randomBytes(8).toString('hex')}\n`);
    writeFileSync(attachment, content);
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        'swaks',
        [
          '--server',
          '127.0.0.1',
          '--port',
          String(server.inboundPort),
          '--tls',
          '--ehlo',
          'mail.sender.test',
          '--from',
          'bob@sender.test',
          '--to',
          'archive@acme.test',
          '--header',
          'Subject: from swaks',
          '--body',
          'hello from swaks',
          '--attach-type',
          'text/plain',
          '--attach-name',
          'notes.txt',
          '--attach',
          `@${attachment}`,
        ],
        { timeout: 30_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout)),
      ),
    );
    const id = idOf(out);
    const read = await api('GET', `/v1/emails/receiving/${id}`);
    assert.equal(read.status, 200, show(read));
    assert.equal(read.body.subject, 'from swaks');
    assert.match(read.body.text, /hello from swaks/);
    assert.equal(read.body.envelope.tls, true);
    assert.equal(read.body.envelope.helo, 'mail.sender.test');
    const [att] = read.body.attachments;
    assert.equal(att.filename, 'notes.txt');
    const bytes = await request(server.httpUrl, 'GET', `/v1/emails/receiving/${id}/attachments/${att.id}/content`, {
      key,
    });
    assert.equal(bytes.text, content.toString());
    // Stored only: no email.received for it.
    const events = await server.runtime.store.db
      .selectFrom('events')
      .select('type')
      .where('email_id', '=', id)
      .execute();
    assert.deepEqual(events, []);
  });

  it('refuses unrouted addresses and reject routes at RCPT TO with 550, and takes the routed ones of the same message', async () => {
    for (const to of ['nobody@acme.test', 'someone@unknown.test', 'blocked@acme.test']) {
      await assert.rejects(sendRaw('ann@sender.test', [to], 'Subject: x\r\n\r\nx\r\n'), (err: SmtpError) => {
        assert.equal(err.responseCode, 550, to);
        assert.match(err.response ?? '', to === 'blocked@acme.test' ? /^550 5\.7\.1 / : /^550 5\.1\.1 /);
        return true;
      });
    }
    const raw = await compose({
      from: 'ann@sender.test',
      to: ['support@acme.test', 'nobody@acme.test'],
      bcc: 'reply+t1@acme.test',
      subject: 'Partly routed',
      text: 'x',
    });
    const info = await sendRaw('ann@sender.test', ['support@acme.test', 'nobody@acme.test', 'reply+t1@acme.test'], raw);
    assert.deepEqual(info.accepted, ['support@acme.test', 'reply+t1@acme.test']);
    assert.deepEqual(info.rejected, ['nobody@acme.test']);
    const data = (await webhookFor('Partly routed')).data;
    assert.deepEqual(data.received_for, ['support@acme.test', 'reply+t1@acme.test']);
    assert.deepEqual(data.bcc, ['reply+t1@acme.test']);
    assert.equal(data.route_ids.length, 2);
  });

  it('announces SIZE and takes a message of exactly the limit; one byte more gets 552', async () => {
    const conn = transport();
    await conn.verify();
    const head = 'From: ann@sender.test\r\nTo: support@acme.test\r\nSubject: size\r\n\r\n';
    const exactly = (size: number) => head + 'x'.repeat(size - head.length - 2) + '\r\n';
    assert.equal(Buffer.byteLength(exactly(MAX_SIZE)), MAX_SIZE);
    for (const size of [MAX_SIZE - 1, MAX_SIZE]) {
      const info = await sendRaw('ann@sender.test', ['support@acme.test'], exactly(size));
      const id = idOf(info.response);
      assert.equal((await api('GET', `/v1/emails/receiving/${id}`)).body.size, size);
    }
    await assert.rejects(sendRaw('ann@sender.test', ['support@acme.test'], exactly(MAX_SIZE + 1)), (err: SmtpError) => {
      assert.equal(err.responseCode, 552, err.response);
      return true;
    });
  });

  it('takes up to smtp.inbound.maxRecipients recipients per transaction; the next gets 452', async () => {
    const to = [
      'reply+1@acme.test',
      'reply+2@acme.test',
      'reply+3@acme.test',
      'reply+4@acme.test',
      'reply+5@acme.test',
    ];
    const info = await sendRaw('ann@sender.test', to, 'Subject: many\r\n\r\nmany\r\n');
    assert.deepEqual(info.accepted, to.slice(0, 4));
    assert.equal((info.rejectedErrors?.[0] as SmtpError | undefined)?.responseCode, 452);
  });

  it('threads a reply with the email we sent: the original id, its campaign and subscriber, tags and metadata', async () => {
    // A transactional email, delivered for real to the customer's (test) MX.
    const sent = await api('POST', '/v1/emails', {
      from: 'Acme Support <support@acme.test>',
      to: 'carol@customer.test',
      reply_to: 'reply+ticket-7@acme.test',
      subject: 'Your ticket 7',
      text: 'We are on it.',
      tags: [{ name: 'ticket', value: '7' }],
      metadata: { ticket_id: 7 },
    });
    assert.equal(sent.status, 200, show(sent));
    const delivered = await eventually(
      async () => mx.messages.find((m) => m.raw.includes('Your ticket 7')),
      120_000,
      'delivery to the customer MX',
    );
    const original = await simpleParser(delivered.raw);
    // Carol's mail program answers it: In-Reply-To and References name what she received.
    const reply = await compose({
      from: 'carol@customer.test',
      to: original.replyTo!.value[0]!.address,
      subject: `Re: ${original.subject}`,
      text: 'Thanks!\n',
      inReplyTo: original.messageId,
      references: [original.messageId!],
    });
    await sendRaw('carol@customer.test', ['reply+ticket-7@acme.test'], reply);
    const data = (await webhookFor('Re: Your ticket 7')).data;
    assert.equal(data.in_reply_to, original.messageId);
    assert.equal(data.in_reply_to_email_id, sent.body.id);
    assert.deepEqual(data.in_reply_to_email.tags, ['ticket:7']);
    assert.deepEqual(data.in_reply_to_email.metadata, { ticket_id: 7 });
    assert.equal(data.in_reply_to_email.campaign_id, null);

    // A campaign message: the reply names its campaign and subscriber.
    assert.equal(
      (await api('POST', '/api/v1/subscribers', { email: 'dave@customer.test', tags: ['news'] })).status,
      201,
    );
    const campaign = await api('POST', '/api/v1/campaigns/send', {
      subject: 'November news',
      from_name: 'Acme',
      from_email: 'news@acme.test',
      html: '<p>News</p>',
      tags: ['news'],
    });
    assert.equal(campaign.status, 202, show(campaign));
    const news = await eventually(
      async () => mx.messages.find((m) => m.raw.includes('November news')),
      120_000,
      'the campaign message',
    );
    const newsId = (await simpleParser(news.raw)).messageId!;
    // A reply that quotes the thread only in References (some clients do).
    await sendRaw(
      'dave@customer.test',
      ['support@acme.test'],
      await compose({
        from: 'dave@customer.test',
        to: 'support@acme.test',
        subject: 'Re: November news',
        text: 'Stop?',
        references: ['<unknown@elsewhere.test>', newsId],
      }),
    );
    const fromCampaign = (await webhookFor('Re: November news')).data;
    assert.equal(fromCampaign.in_reply_to_email.campaign_id, campaign.body.campaignId);
    const subscriber = (await api('GET', '/v1/subscribers?email=dave@customer.test')).body.subscribers[0];
    assert.equal(fromCampaign.in_reply_to_email.subscriber_id, subscriber.id);
    const email = await api('GET', `/v1/emails/${fromCampaign.in_reply_to_email_id}`);
    assert.equal(email.body.campaign_id, campaign.body.campaignId);

    // A Message-ID another workspace sent does not thread into this one.
    const stranger = await compose({
      from: 'x@customer.test',
      to: 'support@acme.test',
      subject: 'Re: not ours',
      text: 'x',
      inReplyTo: '<not-ours@acme.test>',
    });
    await sendRaw('x@customer.test', ['support@acme.test'], stranger);
    assert.equal((await webhookFor('Re: not ours')).data.in_reply_to_email_id, null);
  });

  it('serves the receiving calls of the Resend SDK: emails.receiving and inboxes', async () => {
    const resend = new Resend(key, { baseUrl: `${server.httpUrl}/v1` });
    const created = await resend.inboxes.create({
      emailAddress: 'sales@acme.test',
      name: 'Sales',
      fromName: 'Acme Sales',
    });
    assert.equal(created.error, null, JSON.stringify(created.error));
    assert.equal(created.data.object, 'inbox');
    const inbox = await resend.inboxes.get('sales@acme.test');
    assert.equal(inbox.data!.id, created.data.id);
    assert.equal(inbox.data!.email_address, 'sales@acme.test');
    assert.equal(inbox.data!.from_name, 'Acme Sales');
    assert.equal((await resend.inboxes.update(created.data.id, { name: 'Sales team' })).error, null);

    const raw = await compose({
      from: 'ann@sender.test',
      to: 'sales@acme.test',
      subject: 'A quote please',
      text: 'Quote?',
      attachments: [{ filename: 'specs.txt', content: 'specs' }],
    });
    const id = idOf((await sendRaw('ann@sender.test', ['sales@acme.test'], raw)).response);

    const list = await resend.emails.receiving.list({ limit: 2 });
    assert.equal(list.error, null, JSON.stringify(list.error));
    assert.equal(list.data.object, 'list');
    assert.equal(list.data.data[0]!.id, id, 'newest first');
    assert.equal(list.data.has_more, true);
    const next = await resend.emails.receiving.list({ limit: 2, after: list.data.data[1]!.id });
    assert.ok(
      next.data!.data.every((e) => !list.data.data.some((f) => f.id === e.id)),
      'the next page holds other messages',
    );

    const got = await resend.emails.receiving.get(id);
    assert.equal(got.error, null, JSON.stringify(got.error));
    assert.equal(got.data.subject, 'A quote please');
    assert.deepEqual(got.data.received_for, ['sales@acme.test']);
    assert.equal(got.data.text, 'Quote?');
    const attachments = await resend.emails.receiving.attachments.list({ emailId: id });
    assert.equal(attachments.data!.data[0]!.filename, 'specs.txt');
    const one = await resend.emails.receiving.attachments.get({ emailId: id, id: attachments.data!.data[0]!.id });
    assert.equal(one.data!.object, 'attachment');
    assert.equal(one.data!.size, 5);

    const inboxes = await resend.inboxes.list();
    assert.deepEqual(
      inboxes.data!.data.map((i) => i.email_address),
      ['support@acme.test', 'archive@acme.test', 'blocked@acme.test', 'sales@acme.test'],
      'routes for one address are the inboxes; patterns are not',
    );
    assert.ok(inboxes.data!.data.find((i) => i.email_address === 'sales@acme.test')!.last_received);
    const removed = await resend.inboxes.remove('sales@acme.test');
    assert.equal(removed.error, null);
    await assert.rejects(
      sendRaw('ann@sender.test', ['sales@acme.test'], raw),
      (err: SmtpError) => err.responseCode === 550,
    );
  });

  it('manages routes through /v1: validation, conflicts, patterns before the catch-all', async () => {
    const bad = await api('POST', '/v1/receiving/routes', { address: 'not an address' });
    assert.equal(bad.status, 400, show(bad));
    const unverified = await api('POST', '/v1/receiving/routes', { address: 'x@unverified.test' });
    assert.equal(unverified.status, 403, show(unverified));
    const dup = await api('POST', '/v1/receiving/routes', { address: 'Support@ACME.test' });
    assert.equal(dup.status, 409, show(dup));
    const badAction = await api('POST', '/v1/receiving/routes', { address: 'new@acme.test', action: 'forward' });
    assert.equal(badAction.status, 400, show(badAction));

    // A catch-all takes what no other route covers; the more specific routes still win.
    const catchAll = await api('POST', '/v1/receiving/routes', { address: '*@acme.test', action: 'store' });
    assert.equal(catchAll.status, 201, show(catchAll));
    const info = await sendRaw(
      'ann@sender.test',
      ['anyone@acme.test', 'reply+9@acme.test'],
      'Subject: catch\r\n\r\nall\r\n',
    );
    assert.deepEqual(info.accepted, ['anyone@acme.test', 'reply+9@acme.test']);
    const read = await api('GET', `/v1/emails/receiving/${idOf(info.response)}`);
    const patternRoute = (await api('GET', '/v1/receiving/routes/reply+*@acme.test')).body;
    assert.deepEqual(read.body.route_ids.sort(), [catchAll.body.id, patternRoute.id].sort());

    const patched = await api('PATCH', `/v1/receiving/routes/${catchAll.body.id}`, { action: 'reject' });
    assert.equal(patched.body.action, 'reject');
    await assert.rejects(
      sendRaw('ann@sender.test', ['anyone@acme.test'], 'Subject: x\r\n\r\nx\r\n'),
      (err: SmtpError) => err.responseCode === 550,
    );
    assert.equal((await api('DELETE', `/v1/receiving/routes/${catchAll.body.id}`)).status, 200);
    const list = await api('GET', '/v1/receiving/routes?kind=pattern');
    assert.deepEqual(
      list.body.routes.map((r: { address: string }) => r.address),
      ['reply+*@acme.test'],
    );
    assert.equal(list.body.pagination.total, 1);
  });

  it('forgets received messages after retention.days, with their content', async () => {
    const page = await api('GET', '/v1/emails/receiving?limit=100');
    assert.ok(page.body.data.length > 5);
    const db = server.runtime.store.db;
    const later = { now: () => Date.now() + (server.config.retention.days + 1) * 24 * 3600 * 1000 };
    const report = await runRetention({ db, clock: later, config: server.config });
    assert.equal(report.receivedEmails, page.body.data.length);
    assert.equal((await api('GET', `/v1/emails/receiving/${page.body.data[0].id}`)).status, 404);
    assert.deepEqual(await db.selectFrom('received_email_contents').select('email_id').execute(), []);
  });
});

describe('receiving: limits of the inbound listener, DMARC enforcement, a large message', () => {
  const LARGE = 18 * 1024 * 1024;
  const clock = manualClock();
  let dns: TestDns;
  let server: TestServer;
  let key: string;

  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer(
      {
        delivery: { dnsServers: [dns.server] },
        smtp: {
          inbound: {
            enabled: true,
            port: 0,
            maxConnectionsPerIp: 3,
            commandsPerMinutePerIp: 20,
            rejectDmarcFailures: true,
          },
        },
      },
      { clock },
    );
    await addVerifiedDomain(server, dns, 'acme.test');
    key = await server.key();
    assert.equal(
      (await server.runtime.services.routes.add(server.workspaceId, { address: 'support@acme.test' })).action,
      'webhook',
    );
    dns.set('sender.test', 'TXT', ['v=spf1 ip4:127.0.0.1 -all']);
    dns.set('_dmarc.sender.test', 'TXT', ['v=DMARC1; p=reject']);
    dns.set('forger.test', 'TXT', ['v=spf1 ip4:192.0.2.1 -all']);
    dns.set('_dmarc.forger.test', 'TXT', ['v=DMARC1; p=reject']);
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  const transport = () =>
    nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.inboundPort!,
      secure: false,
      tls: { rejectUnauthorized: false },
    });

  it('holds smtp.inbound.maxConnectionsPerIp connections from one address; the next gets 421 until one closes', async () => {
    const sessions: SmtpSession[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const s = await openSmtpSession(server.inboundPort!);
        sessions.push(s);
        assert.match(s.greeting, /^220 /, `connection ${i + 1}`);
      }
      const fourth = await openSmtpSession(server.inboundPort!);
      assert.match(fourth.greeting, /^421 4\.7\.0 Too many connections from /);
      await fourth.closed;
      sessions.shift()!.close();
      // The count drops once the server has seen the close.
      const again = await eventually(
        async () => {
          const s = await openSmtpSession(server.inboundPort!);
          if (s.greeting.startsWith('220')) return s;
          await s.closed;
          return undefined;
        },
        10_000,
        'a connection after one closed',
      );
      sessions.push(again);
    } finally {
      for (const s of sessions) s.close();
    }
  });

  it('counts MAIL FROM and RCPT TO per client address and minute: the limit passes, one more gets 421', async () => {
    clock.advance(60_000); // a fresh window
    const s = await eventually(
      async () => {
        const session = await openSmtpSession(server.inboundPort!);
        if (session.greeting.startsWith('220')) return session;
        await session.closed;
        return undefined;
      },
      10_000,
      'a free connection slot',
    );
    try {
      assert.match(await s.command('EHLO client.sender.test'), /^250 /);
      for (let i = 0; i < 10; i++) {
        assert.match(await s.command('MAIL FROM:<ann@sender.test>'), /^250 /, `MAIL ${i + 1}`);
        assert.match(await s.command('RCPT TO:<support@acme.test>'), /^250 /, `RCPT ${i + 1}`);
        assert.match(await s.command('RSET'), /^250 /);
      }
      assert.match(await s.command('MAIL FROM:<ann@sender.test>'), /^421 4\.7\.0 Too many commands from /);
      await s.closed;
    } finally {
      s.close();
    }
    clock.advance(60_000);
    const info = await transport().sendMail({
      envelope: { from: 'ann@sender.test', to: ['support@acme.test'] },
      raw: 'Subject: next minute\r\n\r\nok\r\n',
    });
    assert.match(info.response, /^250 /, 'the next minute is a new window');
  });

  it('refuses mail failing DMARC under p=reject with 550 5.7.1 when smtp.inbound.rejectDmarcFailures is on', async () => {
    clock.advance(60_000);
    await assert.rejects(
      transport().sendMail({
        envelope: { from: 'ceo@forger.test', to: ['support@acme.test'] },
        raw: 'From: ceo@forger.test\r\nSubject: pay\r\n\r\nnow\r\n',
      }),
      (err: SmtpError) => {
        assert.equal(err.responseCode, 550, err.response);
        assert.match(err.response ?? '', /5\.7\.1 Rejected by the DMARC policy of forger\.test/);
        return true;
      },
    );
    const passing = await transport().sendMail({
      envelope: { from: 'ann@sender.test', to: ['support@acme.test'] },
      raw: 'From: ann@sender.test\r\nSubject: fine\r\n\r\nok\r\n',
    });
    assert.match(passing.response, /^250 /, 'aligned SPF passes DMARC');
  });

  it('takes a large message (18 MB attachment) under the default size limit, bytes intact', async () => {
    clock.advance(60_000);
    assert.equal(server.config.smtp.inbound.maxMessageSize, 25 * 1024 * 1024);
    const file = randomBytes(LARGE);
    const raw = await compose({
      from: 'ann@sender.test',
      to: 'support@acme.test',
      subject: 'Big',
      text: 'see attached',
      attachments: [{ filename: 'big.bin', content: file }],
    });
    const info = await transport().sendMail({ envelope: { from: 'ann@sender.test', to: ['support@acme.test'] }, raw });
    const id = idOf(info.response);
    const read = await request(server.httpUrl, 'GET', `/v1/emails/receiving/${id}`, { key });
    const att = read.body.attachments[0];
    assert.equal(att.size, LARGE);
    const bytes = await fetch(`${server.httpUrl}/v1/emails/receiving/${id}/attachments/${att.id}/content`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(sha256(Buffer.from(await bytes.arrayBuffer())), sha256(file));
  });
});
