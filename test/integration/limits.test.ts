import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show, type ApiResponse } from '../helpers/http.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Every documented limit at the limit, just under it and just over it, on each intake where
 * it applies: legacy send, /v1/emails, batch, campaigns, subscribers, domains, SMTP
 * submission. What is accepted at the attachment limits arrives at the loopback MX byte for
 * byte; what is refused is a 400 in the surface's envelope naming the field and the limit.
 */

const MB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** Deterministic bytes that do not compress to nothing: position-dependent. */
const bytes = (n: number, seed: number) => {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
};
/** A metadata object whose JSON is exactly `n` bytes: {"k":"…"} with `char` repeated. */
const metadataOf = (n: number, char = 'x') => ({ k: char.repeat((n - 8) / Buffer.byteLength(char)) });
/** `levels` objects nested in one another: {"a":{"a":…{}}}. */
const nested = (levels: number): Record<string, unknown> => {
  let v: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
};

/** A 400 in the surface's own envelope, naming the field, with the rate-limit headers. */
function refused(res: ApiResponse, message: RegExp): void {
  assert.equal(res.status, 400, show(res));
  if (res.body.success === false) {
    assert.equal(res.body.code, 'VALIDATION_ERROR');
    assert.match(res.body.error, message);
  } else {
    assert.equal(res.body.error.code, 'validation_error', show(res));
    assert.match(res.body.error.message, message);
    assert.match(res.body.request_id, /^req_/);
  }
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    assert.ok(res.headers.get(h), `${h} on a 400`);
}
const ok = (res: ApiResponse, status = 200) => assert.equal(res.status, status, show(res));

describe('limits on every intake', () => {
  let dns: TestDns;
  let mx: TestMx;
  let files: Server;
  let filesUrl: string;
  let server: TestServer;
  let live: string;
  let test: string;
  const served = new Map<string, Buffer>();

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    // Attachment URLs are fetched by name, through the loopback DNS server.
    files = createServer((req, res) => {
      const body = served.get(req.url ?? '');
      if (!body) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
    });
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    dns.set('files.limits.test', 'A', ['127.0.0.1']);
    filesUrl = `http://files.limits.test:${(files.address() as AddressInfo).port}`;
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], port: mx.port, pollInterval: 50, mtaSts: false },
      attachments: { allowPrivateNetworks: true },
    });
    live = await server.key();
    test = await server.key({ test: true });
    await addVerifiedDomain(server, dns, 'sender.test');
  });
  after(async () => {
    await server.close();
    files.closeAllConnections();
    await new Promise<void>((r) => files.close(() => r()));
    await mx.close();
    await dns.close();
  });

  const post = (path: string, body: unknown, options: { key?: string; headers?: Record<string, string> } = {}) =>
    request(server.httpUrl, 'POST', path, { key: options.key ?? test, body, headers: options.headers });
  const v1 = (extra: Record<string, unknown> = {}) => ({
    from: 'shop@sender.test',
    to: 'ann@dest.test',
    subject: 'Hello',
    html: '<p>Hi</p>',
    ...extra,
  });
  const legacy = (extra: Record<string, unknown> = {}) => ({
    from_email: 'shop@sender.test',
    to: 'ann@dest.test',
    subject: 'Hello',
    html: '<p>Hi</p>',
    ...extra,
  });
  const file = (name: string, content: Buffer) => ({
    filename: name,
    content: content.toString('base64'),
    contentType: 'application/octet-stream',
  });
  const urlFile = (name: string, content: Buffer) => {
    served.set(`/${name}`, content);
    return { filename: name, url: `${filesUrl}/${name}`, contentType: 'application/octet-stream' };
  };
  const receivedAttachments = async (subject: string) => {
    const [message] = await eventually(
      async () => {
        const found = mx.messages.filter((m) => m.raw.includes(Buffer.from(`Subject: ${subject}`)));
        return found.length > 0 ? found : undefined;
      },
      60_000,
      `"${subject}" at the MX`,
    );
    const parsed = await simpleParser(message!.raw);
    return new Map(parsed.attachments.map((a) => [a.filename!, sha(a.content)]));
  };

  describe('attachments: 5 files, 5 MB each, 7 MB together (content and url)', () => {
    it('at the limits: five files making exactly 7 MB, one of exactly 5 MB, arrive byte for byte', async () => {
      const five = [5 * MB, 512 * 1024, 512 * 1024, 512 * 1024, 512 * 1024].map((n, i) => bytes(n, i));
      assert.equal(
        five.reduce((n, b) => n + b.length, 0),
        7 * MB,
      );
      // /v1/emails: content (the 5 MB file) and urls together.
      const attachments = [file('f0.bin', five[0]!), ...five.slice(1).map((b, i) => urlFile(`v1-f${i + 1}.bin`, b))];
      ok(await post('/v1/emails', v1({ subject: 'seven exactly', attachments }), { key: live }));
      const got = await receivedAttachments('seven exactly');
      assert.deepEqual([...got.values()], five.map(sha), 'every attachment intact, in order');

      // Legacy send: files just under 5 MB and 7 MB together; and a 4 MB PDF (3.5 MB and more once answered 500).
      const under = [bytes(5 * MB - 1, 9), bytes(2 * MB, 10)];
      ok(
        await post(
          '/api/v1/send',
          legacy({ subject: 'legacy under', attachments: under.map((b, i) => file(`l${i}.bin`, b)) }),
          { key: live },
        ),
        202,
      );
      assert.deepEqual([...(await receivedAttachments('legacy under')).values()], under.map(sha));
      const pdf = bytes(4 * MB, 13);
      ok(
        await post(
          '/api/v1/send',
          legacy({
            subject: 'legacy pdf',
            attachments: [{ ...file('report.pdf', pdf), contentType: 'application/pdf' }],
          }),
          { key: live },
        ),
        202,
      );
      assert.deepEqual([...(await receivedAttachments('legacy pdf')).values()], [sha(pdf)]);

      // Batch: total just under 7 MB, by url.
      const batch = [bytes(5 * MB, 11), bytes(2 * MB - 1, 12)];
      ok(
        await post(
          '/v1/emails/batch',
          [v1({ subject: 'batch under', attachments: batch.map((b, i) => urlFile(`b${i}.bin`, b)) })],
          { key: live },
        ),
      );
      assert.deepEqual([...(await receivedAttachments('batch under')).values()], batch.map(sha));
    });

    it('over the limits: a sixth file, a byte over 5 MB, a byte over 7 MB together', async () => {
      const small = (i: number) => file(`s${i}.txt`, Buffer.from(`file ${i}`));
      const overFile = bytes(5 * MB + 1, 20);
      const overTotal = [bytes(5 * MB, 21), bytes(2 * MB + 1, 22)];
      const cases: Array<[string, unknown[], RegExp]> = [
        ['six files', [0, 1, 2, 3, 4, 5].map(small), /attachments: at most 5 attachments/],
        ['content over 5 MB', [file('big.bin', overFile)], /attachments\[0\]\.content: is larger than 5 MB/],
        ['url over 5 MB', [urlFile('big-url.bin', overFile)], /attachments\[0\]\.url: is larger than 5 MB/],
        [
          'content over 7 MB together',
          overTotal.map((b, i) => file(`t${i}.bin`, b)),
          /attachments: attachments are larger than 7 MB together/,
        ],
        [
          'url over 7 MB together',
          overTotal.map((b, i) => urlFile(`tu${i}.bin`, b)),
          /attachments: attachments are larger than 7 MB together/,
        ],
      ];
      for (const [what, attachments, message] of cases) {
        refused(await post('/v1/emails', v1({ attachments })), message);
        refused(await post('/api/v1/send', legacy({ attachments })), message);
        refused(
          await post('/v1/emails/batch', [v1(), v1({ attachments })]),
          new RegExp(`^\\[1\\]\\.${message.source}`),
        );
        assert.ok(true, what);
      }
      refused(
        await post('/v1/emails', v1({ attachments: [{ ...small(0), content: 'not base64!' }] })),
        /attachments\[0\]\.content: must be base64/,
      );
    });
  });

  it('recipients: 50 across to, cc and bcc, on /v1/emails and batch', async () => {
    const addresses = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@dest.test`);
    const split = (list: string[]) => ({ to: list.slice(0, 20), cc: list.slice(20, 40), bcc: list.slice(40) });
    ok(await post('/v1/emails', v1(split(addresses(50)))));
    ok(await post('/v1/emails', v1(split(addresses(49)))));
    refused(await post('/v1/emails', v1(split(addresses(51)))), /^to: at most 50 recipients/);
    ok(await post('/v1/emails/batch', [v1(split(addresses(50)))]));
    refused(await post('/v1/emails/batch', [v1(split(addresses(51)))]), /^\[0\]\.to: at most 50 recipients/);
  });

  it('batch size: 100 messages per batch, 100 recipients per template send', async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => v1({ to: `b${i}@dest.test` }));
    ok(await post('/v1/emails/batch', many(100)));
    ok(await post('/v1/emails/batch', many(99)));
    refused(await post('/v1/emails/batch', many(101)), /^body: /);
    const recipients = (n: number) => Array.from({ length: n }, (_, i) => ({ to: `t${i}@dest.test` }));
    const { to: _to, ...shared } = v1();
    ok(await post('/v1/emails', { ...shared, recipients: recipients(100) }));
    refused(await post('/v1/emails', { ...shared, recipients: recipients(101) }), /^recipients: /);
  });

  it('Idempotency-Key: at most 256 characters, on /v1/emails and batch', async () => {
    for (const [path, body] of [
      ['/v1/emails', v1()],
      ['/v1/emails/batch', [v1()]],
    ] as const) {
      ok(await post(path, body, { headers: { 'Idempotency-Key': `${path}-${'k'.repeat(256 - path.length - 1)}` } }));
      ok(await post(path, body, { headers: { 'Idempotency-Key': `${path}-${'k'.repeat(255 - path.length - 1)}` } }));
      refused(await post(path, body, { headers: { 'Idempotency-Key': 'k'.repeat(257) } }), /^Idempotency-Key: /);
    }
  });

  it('subject: at most 998 characters; custom header values 998, names 76', async () => {
    for (const n of [997, 998]) {
      ok(await post('/v1/emails', v1({ subject: 's'.repeat(n) })));
      ok(await post('/api/v1/send', legacy({ subject: 's'.repeat(n) })), 202);
      ok(await post('/v1/emails/batch', [v1({ subject: 's'.repeat(n) })]));
    }
    refused(await post('/v1/emails', v1({ subject: 's'.repeat(999) })), /^subject: must be at most 998 characters/);
    refused(
      await post('/api/v1/send', legacy({ subject: 's'.repeat(999) })),
      /^subject: must be at most 998 characters/,
    );
    refused(await post('/v1/emails/batch', [v1({ subject: 's'.repeat(999) })]), /^\[0\]\.subject: must be at most 998/);

    const name = (n: number) => `X-${'h'.repeat(n - 2)}`;
    for (const n of [997, 998]) ok(await post('/v1/emails', v1({ headers: { 'X-Ref': 'v'.repeat(n) } })));
    refused(
      await post('/v1/emails', v1({ headers: { 'X-Ref': 'v'.repeat(999) } })),
      /^headers\.X-Ref: must be one line of at most 998 characters/,
    );
    refused(
      await post('/v1/emails/batch', [v1({ headers: { 'X-Ref': 'v'.repeat(999) } })]),
      /^\[0\]\.headers\.X-Ref: /,
    );
    for (const n of [75, 76]) ok(await post('/v1/emails', v1({ headers: { [name(n)]: 'v' } })));
    refused(await post('/v1/emails', v1({ headers: { [name(77)]: 'v' } })), /is not a valid header name/);
  });

  it('metadata: 8 KB as UTF-8 JSON and 32 levels, on sends, subscribers and domains', async () => {
    const intakes: Array<[string, (m: unknown) => unknown, number, string]> = [
      ['/v1/emails', (m) => v1({ metadata: m }), 200, ''],
      ['/api/v1/send', (m) => legacy({ metadata: m }), 202, ''],
      ['/v1/emails/batch', (m) => [v1({ metadata: m })], 200, '[0].'],
      ['/api/v1/subscribers', (m) => ({ email: `m${Math.random()}@dest.test`, metadata: m }), 201, ''],
      ['/v1/subscribers', (m) => ({ email: `m${Math.random()}@dest.test`, metadata: m }), 201, ''],
    ];
    for (const [path, body, status, prefix] of intakes) {
      const at = new RegExp(`^${prefix.replace(/[[\].]/g, '\\$&')}metadata: `);
      ok(await post(path, body(metadataOf(8192))), status);
      ok(await post(path, body(metadataOf(8190))), status);
      ok(await post(path, body(metadataOf(8192, 'é'))), status);
      refused(await post(path, body(metadataOf(8194))), new RegExp(`${at.source}must be at most 8192 bytes`));
      // 4,093 two-byte characters: 8,194 bytes though only 4,101 characters of JSON.
      refused(await post(path, body(metadataOf(8194, 'é'))), new RegExp(`${at.source}must be at most 8192 bytes`));
      ok(await post(path, body(nested(32))), status);
      ok(await post(path, body(nested(31))), status);
      refused(await post(path, body(nested(33))), new RegExp(`${at.source}must nest at most 32 levels`));
    }
    ok(await post('/api/v1/domains', { domain: 'meta-at.example', metadata: nested(32) }, { key: live }), 201);
    refused(
      await post('/api/v1/domains', { domain: 'meta-over.example', metadata: nested(33) }, { key: live }),
      /^metadata: must nest at most 32 levels/,
    );
    refused(
      await post('/v1/domains', { domain: 'meta-big.example', metadata: metadataOf(8194) }, { key: live }),
      /^metadata: must be at most 8192 bytes/,
    );
  });

  it('request bodies nest at most 64 levels, on every route that reads a body', async () => {
    // `variables: {v: …}` nested so that the whole body is `levels` deep.
    const deep = (levels: number) => nested(levels - 2);
    for (const levels of [63, 64]) {
      ok(await post('/v1/emails', v1({ variables: { v: deep(levels) } })));
      ok(await post('/api/v1/send', legacy({ variables: { v: deep(levels) } })), 202);
    }
    const over = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
    for (const path of [
      '/v1/emails',
      '/api/v1/send',
      '/api/v1/subscribers',
      '/api/v1/campaigns/send',
      '/v1/webhooks',
      '/v1/domains',
    ]) {
      const res65 = await post(path, { variables: { v: deep(65) } });
      refused(res65, /^body: objects and arrays may nest at most 64 levels deep/);
      const res = await request(server.httpUrl, 'POST', path, {
        key: test,
        raw: over,
        headers: { 'content-type': 'application/json' },
      });
      refused(res, /^body: objects and arrays may nest at most 64 levels deep/);
    }
  });

  describe('SMTP submission', () => {
    const transport = () =>
      nodemailer.createTransport({
        host: '127.0.0.1',
        port: server.smtp!.starttls,
        requireTLS: true,
        auth: { user: 'apikey', pass: test },
        tls: { rejectUnauthorized: false },
      });
    const mail = (extra: Record<string, unknown>) => ({
      from: 'shop@sender.test',
      to: 'ann@dest.test',
      subject: 'smtp',
      text: 'hello',
      ...extra,
    });
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => assert.fail('expected a refusal'),
        (e: { responseCode?: number; response?: string }) => e,
      );

    it('recipients: 50 per transaction; the 51st RCPT TO gets 452', async () => {
      const list = (n: number) => Array.from({ length: n }, (_, i) => `s${i}@dest.test`);
      const at = await transport().sendMail(mail({ to: list(50) }));
      assert.equal(at.accepted.length, 50);
      const over = await transport().sendMail(mail({ to: list(51) }));
      assert.equal(over.accepted.length, 50);
      assert.deepEqual(over.rejected, ['s50@dest.test']);
      assert.equal((over.rejectedErrors?.[0] as { responseCode?: number }).responseCode, 452);
    });

    it('X-Mailsvc-Metadata: 8 KB and 32 levels, like the API', async () => {
      for (const metadata of [metadataOf(8192), nested(32)]) {
        const info = await transport().sendMail(mail({ headers: { 'X-Mailsvc-Metadata': JSON.stringify(metadata) } }));
        assert.match(info.response, /^250 /);
      }
      const big = await failure(
        transport().sendMail(mail({ headers: { 'X-Mailsvc-Metadata': JSON.stringify(metadataOf(8194)) } })),
      );
      assert.equal(big.responseCode, 554);
      assert.match(big.response!, /X-Mailsvc-Metadata: must be at most 8192 bytes/);
      const deepMeta = await failure(
        transport().sendMail(
          mail({ headers: { 'X-Mailsvc-Metadata': '{"a":'.repeat(5000) + '1' + '}'.repeat(5000) } }),
        ),
      );
      assert.equal(deepMeta.responseCode, 554);
      assert.match(deepMeta.response!, /X-Mailsvc-Metadata: must nest at most 32 levels/);
    });
  });
});

describe('the largest messages, several at once, inside the default memory sizes', () => {
  // One delivery thread and one signing thread, each under its default size
  // (delivery.threadMemory, delivery.signingThreadMemory): messages at the attachment limit by
  // HTTP and at smtp.submission.maxMessageSize by SMTP, on several connections at once, all
  // composed, signed and delivered in flight together. A thread over its heap would be
  // replaced (and the mail retried): none is.
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let key: string;

  before(async () => {
    dns = await startDnsServer();
    // Each message is answered after the others have arrived: they are in flight together.
    mx = await startMxServer({ hooks: { onData: () => new Promise((r) => setTimeout(() => r(undefined), 500)) } });
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    server = await startTestServer({
      delivery: {
        dnsServers: [dns.server],
        port: mx.port,
        pollInterval: 50,
        mtaSts: false,
        workers: 1,
        signingThreads: 1,
        defaultDomainLimit: { concurrency: 10, perMinute: 1_000_000 },
      },
      webhooks: { enabled: false },
    });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'sender.test');
  });
  after(async () => {
    await server.close();
    await mx.close();
    await dns.close();
  });

  it('7 MB of attachments by HTTP on 4 connections and messages of smtp.submission.maxMessageSize by SMTP on 3 arrive byte for byte; a byte over is refused; no thread replaced', async () => {
    const threads = server.workers.deliveryThreads!;
    await eventually(async () => threads.owners().length === 1 || undefined, 120_000, 'the delivery thread ready');
    const [owner] = threads.owners();
    const max = server.runtime.config.smtp.submission.maxMessageSize;
    assert.equal(max, 25 * MB, 'the default limit');
    const seven = (seed: number) => [bytes(5 * MB, seed), bytes(2 * MB, seed + 1)];
    const http = [0, 1, 2, 3].map((i) => ({ subject: `http ${i}`, files: seven(10 * i) }));
    /** A raw message of exactly `size` bytes, its base64 body cut to fit. */
    const raw = (subject: string, size: number, seed: number) => {
      const head = `From: shop@sender.test\r\nTo: ann@dest.test\r\nSubject: ${subject}\r\nMIME-Version: 1.0\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n`;
      const body = bytes(size, seed)
        .toString('base64')
        .replace(/.{76}/g, '$&\r\n')
        .slice(0, size - head.length - 2)
        .replace(/\r$/, 'A');
      return Buffer.from(`${head}${body}\r\n`);
    };
    const smtp = [0, 1, 2].map((i) => ({ subject: `smtp ${i}`, raw: raw(`smtp ${i}`, max, 50 + i) }));
    smtp.forEach((m) => assert.equal(m.raw.length, max));
    const transport = () =>
      nodemailer.createTransport({
        host: '127.0.0.1',
        port: server.smtp!.starttls,
        requireTLS: true,
        auth: { user: 'apikey', pass: key },
        tls: { rejectUnauthorized: false },
      });
    const sent = await Promise.all([
      ...http.map((m) =>
        request(server.httpUrl, 'POST', '/v1/emails', {
          key,
          body: {
            from: 'shop@sender.test',
            to: 'ann@dest.test',
            subject: m.subject,
            html: '<p>Hi</p>',
            attachments: m.files.map((b, j) => ({ filename: `f${j}.bin`, content: b.toString('base64') })),
          },
        }),
      ),
      ...smtp.map((m) =>
        transport().sendMail({ envelope: { from: 'shop@sender.test', to: ['ann@dest.test'] }, raw: m.raw }),
      ),
    ]);
    for (const res of sent.slice(0, http.length)) ok(res as ApiResponse);
    for (const info of sent.slice(http.length)) assert.match((info as { response: string }).response, /^250 /);
    const over = await transport()
      .sendMail({ envelope: { from: 'shop@sender.test', to: ['ann@dest.test'] }, raw: raw('over', max + 1, 60) })
      .then(
        () => assert.fail('a byte over the limit was accepted'),
        (e: { responseCode?: number }) => e,
      );
    assert.equal(over.responseCode, 552);

    const received = await mx.waitFor(http.length + smtp.length, 180_000);
    const bySubject = (subject: string) => received.find((r) => r.raw.includes(Buffer.from(`Subject: ${subject}\r\n`)));
    for (const m of http) {
      const parsed = await simpleParser(bySubject(m.subject)!.raw);
      assert.deepEqual(
        parsed.attachments.map((a) => sha(a.content)),
        m.files.map(sha),
        `${m.subject}: attachments byte for byte`,
      );
    }
    for (const m of smtp) {
      const got = bySubject(m.subject)!.raw;
      // The delivered message is the submitted one under the headers added on the way (DKIM-Signature, Message-ID, ...).
      assert.ok(
        got.length > max && got.includes(m.raw.subarray(m.raw.indexOf('\r\n\r\n'))),
        `${m.subject}: the body byte for byte`,
      );
      assert.match(got.toString('latin1', 0, 4096), /^DKIM-Signature: /m);
    }
    assert.deepEqual(threads.owners(), [owner], 'the delivery thread was never replaced');
  });
});

describe('limits on campaigns', () => {
  let dns: TestDns;
  let server: TestServer;
  let key: string;
  // Campaigns are limited to 5 a minute (refused requests count too): each request a minute later.
  const clock = manualClock();

  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({ delivery: { dnsServers: [dns.server], enabled: false } }, { clock });
    key = await server.key({ test: true });
    await addVerifiedDomain(server, dns, 'sender.test');
    const sub = await request(server.httpUrl, 'POST', '/v1/subscribers', { key, body: { email: 'sub@dest.test' } });
    assert.equal(sub.status, 201, show(sub));
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  const campaign = (path: string, extra: Record<string, unknown>) => {
    clock.advance(60_000);
    return request(server.httpUrl, 'POST', path, {
      key,
      body: { subject: 'News', from_name: 'Shop', from_email: 'news@sender.test', html: '<p>news</p>', ...extra },
    });
  };

  for (const path of ['/api/v1/campaigns/send', '/v1/campaigns']) {
    it(`${path}: subject 998, metadata 8 KB and 32 levels`, async () => {
      ok(await campaign(path, { subject: 's'.repeat(998) }), 202);
      refused(await campaign(path, { subject: 's'.repeat(999) }), /^subject: must be 1 to 998 characters/);
      ok(await campaign(path, { metadata: metadataOf(8192, 'é') }), 202);
      refused(await campaign(path, { metadata: metadataOf(8194, 'é') }), /^metadata: must be at most 8192 bytes/);
      ok(await campaign(path, { metadata: nested(32) }), 202);
      refused(await campaign(path, { metadata: nested(33) }), /^metadata: must nest at most 32 levels/);
    });
  }
});
