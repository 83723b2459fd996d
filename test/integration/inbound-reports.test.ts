import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import nodemailer from 'nodemailer';
import { Webhook } from 'standardwebhooks';
import { emailState, eventually } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import type { TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const CRLF = (text: string) => text.replace(/\r?\n/g, '\r\n');

const dsnFor = (recipient: string, originalMessageId: string) =>
  CRLF(`From: Mail Delivery System <MAILER-DAEMON@mx.dest.test>
To: postmaster
Subject: Undelivered Mail Returned to Sender
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="dsn-boundary"

--dsn-boundary
Content-Type: text/plain; charset=us-ascii

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

--dsn-boundary
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.dest.test
Arrival-Date: Sat, 21 Nov 2026 10:00:00 +0000

Final-Recipient: rfc822; ${recipient}
Original-Recipient: rfc822;${recipient}
Action: failed
Status: 5.1.1
Remote-MTA: dns; store.dest.test
Diagnostic-Code: smtp; 550 5.1.1 <${recipient}>: Recipient address
    rejected: User unknown in virtual mailbox table

--dsn-boundary
Content-Type: text/rfc822-headers

Message-ID: ${originalMessageId}
Subject: Order 7

--dsn-boundary--
`);

const arfFor = (fields: string, original: string, originalType = 'message/rfc822') =>
  CRLF(`From: Feedback Loop <fbl@isp.test>
To: fbl@bounces.shop.example
Subject: Abuse report
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="arf-boundary"

--arf-boundary
Content-Type: text/plain

This is an email abuse report for an email message received from IP 192.0.2.1.

--arf-boundary
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: ExampleFBL/1.0
Version: 1
${fields}
Arrival-Date: Sat, 21 Nov 2026 10:00:00 +0000

--arf-boundary
Content-Type: ${originalType}

${original}
--arf-boundary--
`);

describe('inbound listener: asynchronous bounces and complaints', () => {
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let receiver: WebhookReceiver;
  let key: string;
  let secret: string;
  let transport: ReturnType<typeof nodemailer.createTransport>;

  before(async () => {
    receiver = await startWebhookReceiver();
    rig = await startDeliveringServer({
      delivery: { pollInterval: 50, signingThreads: 1 },
      config: {
        smtp: { inbound: { enabled: true, port: 0, feedbackAddresses: ['fbl@bounces.shop.example'] } },
        webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
      },
      senders: ['shop.example'],
    });
    ({ server, mx } = rig);
    key = await server.key();
    const hook = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key,
      body: { url: `${receiver.url}/reports`, events: ['email.bounced', 'email.complained'] },
    });
    assert.equal(hook.status, 201, show(hook));
    secret = hook.body.secret;
    // As a remote mail server would: plain SMTP to the listener, STARTTLS offered (self-signed).
    transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.inboundPort!,
      secure: false,
      tls: { rejectUnauthorized: false },
    });
  });
  after(async () => {
    transport.close();
    await rig?.close();
    await receiver.close();
  });

  /** Sends an email for real (to the test MX) and returns its id, Message-ID and the VERP return path it went out with. */
  async function deliver(to: string[]) {
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'hello@shop.example', to, subject: 'Order 7', html: '<p>Thanks</p>' },
    });
    assert.equal(res.status, 200, show(res));
    const id = res.body.id as string;
    const state = await eventually(
      async () => {
        const s = await emailState(server.runtime.store.db, id);
        return s.items.every((i) => i.status === 'delivered') ? s : undefined;
      },
      15_000,
      'delivery to the test MX',
    );
    const sent = mx.messages.find((m) => m.raw.toString().includes(state.email.message_id))!;
    assert.match(sent.from, /^b-[0-9a-f]{32}-[0-9a-f]+@bounces\.shop\.example$/);
    return { id, messageId: state.email.message_id, returnPath: sent.from };
  }

  const send = (to: string, raw: string) => transport.sendMail({ envelope: { from: '', to: [to] }, raw });

  it('a DSN to the return path bounces the recipient, suppresses it and emits email.bounced', async () => {
    const { id, messageId, returnPath } = await deliver(['gone@dest.test', 'fine@dest.test']);
    const info = await send(returnPath, dsnFor('gone@dest.test', messageId));
    assert.match(info.response, /^250 .*bounce recorded for 1 recipient/);

    const state = await emailState(server.runtime.store.db, id);
    const byRecipient = Object.fromEntries(state.items.map((i) => [i.recipient, i]));
    assert.equal(byRecipient['gone@dest.test']!.status, 'bounced');
    assert.match(
      byRecipient['gone@dest.test']!.last_response!,
      /^550 5\.1\.1 <gone@dest\.test>: Recipient address rejected: User unknown/,
    );
    assert.equal(byRecipient['fine@dest.test']!.status, 'delivered');
    const bounced = state.events.filter((e) => e.type === 'email.bounced');
    assert.equal(bounced.length, 1);
    assert.equal(bounced[0]!.data.recipient, 'gone@dest.test');
    assert.equal(bounced[0]!.data.bounce.type, 'hard');
    const suppression = await server.runtime.store.db
      .selectFrom('suppressions')
      .selectAll()
      .where('address', '=', 'gone@dest.test')
      .executeTakeFirst();
    assert.equal(suppression?.reason, 'hard_bounce');

    const [hook] = await receiver.waitFor(1, (r) => r.json?.type === 'email.bounced' && r.json.data.email_id === id);
    const payload = new Webhook(secret).verify(hook!.body, hook!.headers as Record<string, string>) as { data: any };
    assert.deepEqual(payload.data.to, ['gone@dest.test']);
    assert.equal(payload.data.bounce.type, 'hard');
    assert.equal(payload.data.smtp.code, 550);

    // The same report again changes nothing.
    const again = await send(returnPath, dsnFor('gone@dest.test', messageId));
    assert.match(again.response, /^250 .*nothing to do/);
    assert.equal(
      (await emailState(server.runtime.store.db, id)).events.filter((e) => e.type === 'email.bounced').length,
      1,
    );
  });

  it('an ARF report to the feedback address emits email.complained and suppresses the complainant', async () => {
    const { id, messageId, returnPath } = await deliver(['angry@dest.test', 'calm@dest.test']);
    const report = arfFor(
      `Original-Mail-From: <${returnPath}>\nOriginal-Rcpt-To: <angry@dest.test>`,
      `From: hello@shop.example\nTo: angry@dest.test\nMessage-ID: ${messageId}\nSubject: Order 7\n\nThanks`,
    );
    const info = await send('fbl@bounces.shop.example', report);
    assert.match(info.response, /^250 .*complaint recorded/);
    const complained = (await emailState(server.runtime.store.db, id)).events.filter(
      (e) => e.type === 'email.complained',
    );
    assert.equal(complained.length, 1);
    assert.equal(complained[0]!.data.recipient, 'angry@dest.test');
    assert.equal(complained[0]!.data.feedback_type, 'abuse');
    const suppression = await server.runtime.store.db
      .selectFrom('suppressions')
      .selectAll()
      .where('address', '=', 'angry@dest.test')
      .executeTakeFirst();
    assert.equal(suppression?.reason, 'complaint');
    const [hook] = await receiver.waitFor(1, (r) => r.json?.type === 'email.complained' && r.json.data.email_id === id);
    const payload = new Webhook(secret).verify(hook!.body, hook!.headers as Record<string, string>) as {
      created_at: string;
      data: any;
    };
    assert.deepEqual(payload.data, {
      email_id: id,
      to: ['angry@dest.test'],
      subject: 'Order 7',
      created_at: payload.created_at,
      from: 'hello@shop.example',
      message_id: messageId,
      broadcast_id: null,
      tags: {},
      variant: null,
      feedback_type: 'abuse',
    });

    const again = await send('fbl@bounces.shop.example', report);
    assert.match(again.response, /^250 .*nothing to do/);
  });

  it('finds the email of a report by its Message-ID when the report carries only the headers', async () => {
    const { id, messageId } = await deliver(['solo@dest.test']);
    const info = await send(
      'fbl@bounces.shop.example',
      arfFor('', `Message-ID: ${messageId}\nSubject: Order 7`, 'text/rfc822-headers'),
    );
    assert.match(info.response, /^250 .*complaint recorded/);
    const complained = (await emailState(server.runtime.store.db, id)).events.filter(
      (e) => e.type === 'email.complained',
    );
    assert.equal(complained[0]?.data.recipient, 'solo@dest.test', 'the only recipient');
  });

  it('refuses other recipients, forged return paths and anything that is not a report, with 550', async () => {
    const { returnPath } = await deliver(['x@dest.test']);
    const forged = returnPath.replace(
      /-([0-9a-f])([0-9a-f]*)@/,
      (_m, c: string, rest: string) => `-${c === '0' ? '1' : '0'}${rest}@`,
    );
    for (const to of ['postmaster@bounces.shop.example', 'someone@dest.test', forged]) {
      await assert.rejects(
        send(to, dsnFor('x@dest.test', '<m@x>')),
        (err: Error & { responseCode?: number }) => err.responseCode === 550,
        to,
      );
    }
    await assert.rejects(
      send(returnPath, CRLF('From: a@b.example\nSubject: hello\n\nJust a message.\n')),
      (err: Error & { responseCode?: number; response?: string }) =>
        err.responseCode === 550 && /delivery status notifications/.test(err.response ?? ''),
    );
  });
});
