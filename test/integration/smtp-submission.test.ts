import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

describe('SMTP submission', () => {
  let server: TestServer;
  let dns: TestDns;
  let key: string;
  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], enabled: false },
      smtp: { submission: { maxMessageSize: 64 * 1024, maxRecipients: 3 } },
    });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'acme.example');
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'pending.example' });
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  const transport = (
    options: { implicit?: boolean; pass?: string; method?: 'PLAIN' | 'LOGIN'; ignoreTLS?: boolean } = {},
  ) =>
    nodemailer.createTransport({
      host: '127.0.0.1',
      port: options.implicit ? server.smtp!.implicitTls! : server.smtp!.starttls,
      secure: options.implicit === true,
      requireTLS: !options.implicit && !options.ignoreTLS,
      ignoreTLS: options.ignoreTLS === true,
      auth: { user: 'apikey', pass: options.pass ?? key, method: options.method ?? 'PLAIN' },
      tls: { rejectUnauthorized: false },
    });

  const rawOf = async (id: string) => {
    const res = await fetch(`${server.httpUrl}/v1/emails/${id}/raw`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    return Buffer.from(await res.arrayBuffer());
  };
  const queuedId = (response: string) => {
    const m = /queued as ([0-9a-f-]{36})/.exec(response);
    assert.ok(m, response);
    return m[1]!;
  };

  it('accepts mail over STARTTLS with AUTH PLAIN and queues it like API mail', async () => {
    const info = await transport().sendMail({
      from: 'Billing <billing@acme.example>',
      to: 'ann@example.org',
      cc: 'carl@example.org',
      bcc: 'audit@example.org',
      subject: 'Invoice 7',
      html: '<p>Your invoice</p>',
      attachments: [{ filename: 'invoice.txt', content: 'total: 10' }],
      headers: {
        'X-Mailsvc-Type': 'marketing',
        'X-Mailsvc-Tags': 'billing, invoices',
        'X-Mailsvc-Metadata': '{"invoice":7}',
        'X-Mailsvc-External-Id': 'inv-7',
      },
    });
    assert.match(info.response, /^250 2\.0\.0 Ok: queued as /);
    const id = queuedId(info.response);

    const detail = await request(server.httpUrl, 'GET', `/v1/emails/${id}`, { key });
    assert.equal(detail.status, 200, show(detail));
    assert.equal(detail.body.intake, 'smtp');
    assert.equal(detail.body.type, 'marketing');
    assert.deepEqual(detail.body.tags, ['billing', 'invoices']);
    assert.deepEqual(detail.body.metadata, { invoice: 7 });
    assert.equal(detail.body.external_id, 'inv-7');
    assert.equal(detail.body.subject, 'Invoice 7');
    assert.deepEqual(detail.body.recipients.map((r: { email: string }) => r.email).sort(), [
      'ann@example.org',
      'audit@example.org',
      'carl@example.org',
    ]);
    const list = await request(server.httpUrl, 'GET', '/v1/emails?limit=1', { key });
    assert.equal(list.body.data[0].id, id, 'shows in the email log like API mail');

    const raw = await rawOf(id);
    assert.ok(!/^x-mailsvc-/im.test(raw.toString()), 'X-Mailsvc-* headers are stripped');
    assert.ok(!/^bcc:/im.test(raw.toString()), 'no Bcc header');
    assert.match(
      raw.toString().replace(/\r\n[ \t]+/g, ' '),
      /^List-Unsubscribe: <http:\/\/localhost:3000\/u\/[^>]+>\r$/m,
      'marketing mail gets one-click unsubscribe',
    );
    assert.match(raw.toString(), /^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
    const mail = await simpleParser(raw);
    assert.equal(mail.subject, 'Invoice 7');
    assert.equal(mail.attachments[0]!.content.toString(), 'total: 10', 'the body is kept as submitted');
    assert.equal(mail.messageId, info.messageId, "the client's Message-ID is kept");
  });

  it('X-Mailsvc-Ip-Pool names the IP pool the message leaves through; an unknown pool is refused', async () => {
    const pool = await server.runtime.services.ipPools.create({
      name: 'submitted',
      addresses: [{ address: '127.0.0.2' }],
    });
    const info = await transport().sendMail({
      from: 'a@acme.example',
      to: 'b@example.org',
      subject: 'Pooled',
      text: 'hi',
      headers: { 'X-Mailsvc-Ip-Pool': 'submitted' },
    });
    const id = queuedId(info.response);
    const row = await server.runtime.store.db
      .selectFrom('emails')
      .select('ip_pool_id')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(row.ip_pool_id, pool.id);
    assert.ok(!/^x-mailsvc-ip-pool/im.test((await rawOf(id)).toString()), 'the header is stripped');
    await assert.rejects(
      transport().sendMail({
        from: 'a@acme.example',
        to: 'b@example.org',
        subject: 'Pooled',
        text: 'hi',
        headers: { 'X-Mailsvc-Ip-Pool': 'nope' },
      }),
      (err: Error & { responseCode?: number }) =>
        err.responseCode === 554 && /X-Mailsvc-Ip-Pool: no IP pool named "nope"/.test(err.message),
    );
  });

  it('accepts mail over implicit TLS with AUTH LOGIN, and from a test key', async () => {
    const info = await transport({ implicit: true, method: 'LOGIN' }).sendMail({
      from: 'a@acme.example',
      to: 'b@example.org',
      subject: 'TLS',
      text: 'hi',
    });
    assert.match(info.response, /^250 /);
    const testKey = await server.key({ test: true });
    const simulated = await transport({ pass: testKey }).sendMail({
      from: 'a@pending.example',
      to: 'b@example.org',
      subject: 'test',
      text: 'hi',
    });
    const detail = await request(server.httpUrl, 'GET', `/v1/emails/${queuedId(simulated.response)}`, { key });
    assert.equal(detail.body.test, true);
  });

  it('refuses a wrong key with 535 and keeps serving', async () => {
    await assert.rejects(
      transport({ pass: 'sk_live_wrong' }).sendMail({
        from: 'a@acme.example',
        to: 'b@example.org',
        subject: 's',
        text: 't',
      }),
      (err: { responseCode?: number }) => {
        assert.equal(err.responseCode, 535);
        return true;
      },
    );
    const ok = await transport().sendMail({ from: 'a@acme.example', to: 'b@example.org', subject: 's', text: 't' });
    assert.match(ok.response, /^250 /);
  });

  it('refuses senders outside verified domains: MAIL FROM with 553, the From header with 550', async () => {
    await assert.rejects(
      transport().sendMail({ from: 'a@pending.example', to: 'b@example.org', subject: 's', text: 't' }),
      (err: { responseCode?: number; response?: string }) => {
        assert.equal(err.responseCode, 553, err.response);
        assert.match(err.response ?? '', /not on a verified domain/);
        return true;
      },
    );
    await assert.rejects(
      transport().sendMail({
        envelope: { from: 'a@acme.example', to: 'b@example.org' },
        from: 'ceo@bank.example',
        to: 'b@example.org',
        subject: 's',
        text: 't',
      }),
      (err: { responseCode?: number; response?: string }) => {
        assert.equal(err.responseCode, 550, err.response);
        assert.match(err.response ?? '', /From: bank\.example is not a verified domain/);
        return true;
      },
    );
  });

  it('advertises SIZE and refuses a bigger message with 552; refuses the 4th recipient with 452', async () => {
    const conn = transport();
    await conn.verify();
    await assert.rejects(
      conn.sendMail({ from: 'a@acme.example', to: 'b@example.org', subject: 's', text: 'x'.repeat(100 * 1024) }),
      (err: { responseCode?: number }) => {
        assert.equal(err.responseCode, 552);
        return true;
      },
    );
    // The 4th RCPT is refused (452) and the message goes to the three accepted ones.
    const partial = await transport().sendMail({
      from: 'a@acme.example',
      to: ['r1@example.org', 'r2@example.org', 'r3@example.org', 'r4@example.org'],
      subject: 's',
      text: 't',
    });
    assert.deepEqual(partial.accepted, ['r1@example.org', 'r2@example.org', 'r3@example.org']);
    assert.deepEqual(partial.rejected, ['r4@example.org']);
    assert.equal((partial.rejectedErrors?.[0] as { responseCode?: number } | undefined)?.responseCode, 452);
    const detail = await request(server.httpUrl, 'GET', `/v1/emails/${queuedId(partial.response)}`, { key });
    assert.equal(detail.body.recipients.length, 3);
    const bad = await transport()
      .sendMail({
        from: 'a@acme.example',
        to: 'b@example.org',
        subject: 's',
        text: 't',
        headers: { 'X-Mailsvc-Metadata': 'not json' },
      })
      .catch((e: { responseCode?: number; response?: string }) => e);
    assert.equal((bad as { responseCode?: number }).responseCode, 554, 'bad X-Mailsvc-Metadata is permanent');
  });

  /** A raw SMTP conversation: each line sent after the previous reply. */
  async function converse(port: number, lines: string[]): Promise<string[]> {
    const socket = connect(port, '127.0.0.1');
    const replies: string[] = [];
    let buffer = '';
    let waiting: ((line: string) => void) | null = null;
    socket.on('data', (d) => {
      buffer += d.toString();
      let idx;
      while ((idx = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, idx);
        buffer = buffer.slice(idx + 2);
        if (/^\d{3} /.test(line)) {
          replies.push(line);
          waiting?.(line);
        }
      }
    });
    const next = () => new Promise<string>((resolve) => (waiting = resolve));
    await next(); // greeting
    for (const line of lines) {
      const r = next();
      socket.write(line + '\r\n');
      await r;
    }
    socket.end();
    return replies;
  }

  it('answers malformed commands with 5xx and keeps serving', async () => {
    const auth = Buffer.from(`\u0000apikey\u0000${key}`).toString('base64');
    const replies = await converse(server.smtp!.starttls, [
      'EHLO client.test',
      'MAIL FROM:<a@acme.example>',
      `AUTH PLAIN ${auth}`,
      'MAIL FROM:<not an address>',
      'MAIL FROM:<a@acme.example>',
      'RCPT TO:<broken',
      'RCPT TO:<@@@>',
      'BOGUS COMMAND',
      'QUIT',
    ]);
    const codes = replies.map((r) => Number(r.slice(0, 3)));
    assert.equal(codes[0], 220);
    assert.equal(codes[1], 250, 'EHLO');
    assert.equal(codes[2], 530, 'MAIL before AUTH needs authentication');
    assert.equal(codes[3], 235, 'AUTH PLAIN over plaintext is allowed on loopback');
    assert.ok(codes[4]! >= 500, `bad MAIL FROM: ${replies[4]}`);
    assert.equal(codes[5], 250);
    assert.ok(codes[6]! >= 500 && codes[7]! >= 500, `bad RCPT TO: ${replies.slice(6, 8).join(' | ')}`);
    assert.ok(codes[8]! >= 500, 'unknown command');
    const ok = await transport().sendMail({ from: 'a@acme.example', to: 'b@example.org', subject: 's', text: 't' });
    assert.match(ok.response, /^250 /);
  });

  it('refuses AUTH without TLS when plaintext is not allowed, and locks out an address after repeated failures', async () => {
    // A clock standing still: the 21 failures all fall in one lockout window.
    const strict = await startTestServer(
      { smtp: { submission: { plaintextAuthOnLoopback: false } } },
      { clock: manualClock() },
    );
    try {
      const k = await strict.key();
      const plain = nodemailer.createTransport({
        host: '127.0.0.1',
        port: strict.smtp!.starttls,
        secure: false,
        ignoreTLS: true,
        auth: { user: 'apikey', pass: k },
      });
      await assert.rejects(plain.verify(), (err: { responseCode?: number; response?: string }) => {
        assert.equal(err.responseCode, 538, err.response);
        return true;
      });
      const withTls = nodemailer.createTransport({
        host: '127.0.0.1',
        port: strict.smtp!.starttls,
        secure: false,
        requireTLS: true,
        auth: { user: 'apikey', pass: k },
        tls: { rejectUnauthorized: false },
      });
      assert.equal(await withTls.verify(), true);

      const wrong = nodemailer.createTransport({
        host: '127.0.0.1',
        port: strict.smtp!.starttls,
        requireTLS: true,
        auth: { user: 'apikey', pass: 'sk_live_nope' },
        tls: { rejectUnauthorized: false },
      });
      const codes: number[] = [];
      for (let i = 0; i < 21; i++)
        codes.push(
          await wrong.verify().then(
            () => 0,
            (e: { responseCode?: number }) => e.responseCode ?? -1,
          ),
        );
      assert.deepEqual(codes.slice(0, 20), Array(20).fill(535));
      assert.equal(codes[20], 454, 'locked out');
      await assert.rejects(
        withTls.verify(),
        (err: { responseCode?: number }) => err.responseCode === 454,
        'even the right key waits out the lockout',
      );
    } finally {
      await strict.close();
    }
  });

  it('lets clients in trustedNetworks submit without AUTH, as the trusted workspace', async () => {
    const trustedDns = await startDnsServer();
    const other = await startTestServer({
      delivery: { dnsServers: [trustedDns.server], enabled: false },
      smtp: { submission: { trustedNetworks: ['127.0.0.0/8', '::1/128'] } },
    });
    const untrusted = await startTestServer({ smtp: { submission: { trustedNetworks: ['10.0.0.0/8'] } } });
    try {
      await addVerifiedDomain(other, trustedDns, 'printer.example');
      const noAuth = (port: number) =>
        nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
      const info = await noAuth(other.smtp!.starttls).sendMail({
        from: 'scanner@printer.example',
        to: 'office@example.org',
        subject: 'Scan',
        text: 'attached',
      });
      assert.match(info.response, /^250 2\.0\.0 Ok: queued as /);
      const email = await other.runtime.services.emails.get(other.workspaceId, queuedId(info.response));
      assert.equal(email.intake, 'smtp');
      assert.equal(email.test, false);
      await assert.rejects(
        noAuth(untrusted.smtp!.starttls).sendMail({
          from: 'a@acme.example',
          to: 'b@example.org',
          subject: 's',
          text: 't',
        }),
        (err: { responseCode?: number }) => {
          assert.equal(err.responseCode, 530);
          return true;
        },
      );
    } finally {
      await other.close();
      await untrusted.close();
      await trustedDns.close();
    }
  });

  it(
    'works with swaks, a client no one here wrote',
    { skip: !existsSync('/usr/bin/swaks') && 'swaks is not installed (apt-get install swaks)' },
    async () => {
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          'swaks',
          [
            '--server',
            '127.0.0.1',
            '--port',
            String(server.smtp!.starttls),
            '--tls',
            '--auth',
            'LOGIN',
            '--auth-user',
            'apikey',
            '--auth-password',
            key,
            '--from',
            'swaks@acme.example',
            '--to',
            'ann@example.org',
            '--header',
            'Subject: from swaks',
            '--body',
            'hello from swaks',
          ],
          { timeout: 30_000 },
          (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout)),
        ),
      );
      const id = queuedId(out);
      const mail = await simpleParser(await rawOf(id));
      assert.equal(mail.subject, 'from swaks');
      assert.match(mail.text ?? '', /hello from swaks/);
    },
  );
});
