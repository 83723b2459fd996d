import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

describe('sending: acceptance, composition and the email log', () => {
  let server: TestServer;
  let dns: TestDns;
  let key: string;
  before(async () => {
    dns = await startDnsServer();
    // Delivery is another component's job; here mail must stay queued where we can read it.
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], enabled: false },
      attachments: { allowPrivateNetworks: true },
    });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'acme.example');
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  const raw = async (id: string) => {
    const res = await fetch(`${server.httpUrl}/v1/emails/${id}/raw`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'message/rfc822');
    return simpleParser(Buffer.from(await res.arrayBuffer()));
  };

  it('queues a legacy send and composes it correctly', async () => {
    const res = await request(server.httpUrl, 'POST', '/api/v1/send', {
      key,
      body: {
        to: 'Ann@Example.ORG',
        subject: 'Grüße aus Köln',
        html: '<h1>Hello</h1><p>See <a href="https://acme.example/x">this</a></p><img src="cid:logo@acme">',
        from_name: 'Jöhn Dœ',
        from_email: 'john@acme.example',
        metadata: { order: 42 },
        external_id: 'ext-1',
        attachments: [
          {
            filename: 'report.txt',
            content: Buffer.from('quarterly numbers').toString('base64'),
            contentType: 'text/plain',
          },
          { filename: 'logo.png', content: PNG.toString('base64'), contentType: 'image/png', cid: 'logo@acme' },
        ],
      },
    });
    assert.equal(res.status, 202, show(res));
    assert.equal(res.body.success, true);
    assert.match(res.body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/, 'UUIDv7');
    assert.match(res.body.message, /transactional priority/);
    assert.match(res.body.message, /5 emails per second/);
    assert.equal(res.headers.get('x-ratelimit-limit'), '5');

    const mail = await raw(res.body.id);
    assert.equal(mail.subject, 'Grüße aus Köln');
    assert.deepEqual(mail.from?.value, [{ name: 'Jöhn Dœ', address: 'john@acme.example' }]);
    assert.equal(mail.to && !Array.isArray(mail.to) ? mail.to.value[0]!.address : '', 'Ann@example.org');
    assert.equal(mail.messageId, `<${res.body.id}@acme.example>`);
    assert.match(mail.html || '', /<h1>Hello<\/h1>/);
    assert.match(mail.text || '', /HELLO/, 'a text part generated from the HTML');
    assert.equal(mail.attachments.length, 2);
    const report = mail.attachments.find((a) => a.filename === 'report.txt')!;
    assert.equal(report.content.toString(), 'quarterly numbers');
    const logo = mail.attachments.find((a) => a.filename === 'logo.png')!;
    assert.equal(logo.cid, 'logo@acme');
    assert.equal(logo.contentDisposition, 'inline');
    assert.ok(logo.content.equals(PNG));
    const headerText = [...mail.headerLines.map((h) => h.line)].join('\n');
    assert.match(headerText, /^Subject: =\?UTF-8\?/m, 'non-ASCII subject is RFC 2047 encoded');
    assert.match(headerText, /^From: =\?UTF-8\?/m, 'non-ASCII name is RFC 2047 encoded');

    const detail = await request(server.httpUrl, 'GET', `/v1/emails/${res.body.id}`, { key });
    assert.equal(detail.status, 200, show(detail));
    assert.equal(detail.body.status, 'queued');
    assert.equal(detail.body.intake, 'legacy');
    assert.deepEqual(detail.body.metadata, { order: 42 });
    assert.equal(detail.body.external_id, 'ext-1');
    assert.deepEqual(
      detail.body.recipients.map((r: { email: string; status: string }) => [r.email, r.status]),
      [['Ann@example.org', 'queued']],
    );
  });

  it('uses from_name "System" and the workspace default sender when from_email is absent', async () => {
    const res = await request(server.httpUrl, 'POST', '/api/v1/send', {
      key,
      body: { to: 'bob@example.org', subject: 'Hi', html: '<p>x</p>' },
    });
    assert.equal(res.status, 202, show(res));
    const mail = await raw(res.body.id);
    assert.deepEqual(mail.from?.value, [{ name: 'System', address: 'noreply@acme.example' }]);
  });

  it('sends on /v1 with cc, bcc, reply_to, headers, tags and a template', async () => {
    const template = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: {
        name: 'welcome',
        subject: 'Welcome, {{user.first}}!',
        html: '<p>Hi {{ user.first }}, your code is {{code}}.{{missing}}</p>',
        text: 'Hi {{user.first}}, code {{code}}',
      },
    });
    assert.equal(template.status, 201, show(template));
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: {
        from: 'Acme <hello@acme.example>',
        to: ['ann@example.org'],
        cc: 'carl@example.org',
        bcc: ['secret@example.org'],
        reply_to: 'support@acme.example',
        headers: { 'X-Campaign': 'spring' },
        tags: [{ name: 'category', value: 'welcome' }, 'onboarding'],
        template_id: template.body.id,
        variables: { user: { first: '<Ann & co>' }, code: 1234 },
      },
    });
    assert.equal(res.status, 200, show(res));
    assert.deepEqual(Object.keys(res.body).sort(), ['id', 'status']);
    assert.equal(res.body.status, 'queued');
    const mail = await raw(res.body.id);
    assert.equal(mail.subject, 'Welcome, <Ann & co>!');
    assert.equal(
      mail.html,
      '<p>Hi &lt;Ann &amp; co&gt;, your code is 1234.</p>',
      'values escaped in html, missing renders empty',
    );
    assert.equal(mail.text?.trim(), 'Hi <Ann & co>, code 1234');
    assert.equal(mail.headers.get('x-campaign'), 'spring');
    assert.equal(mail.headers.get('bcc'), undefined, 'Bcc is never written into the message');
    assert.equal(mail.replyTo?.value[0]!.address, 'support@acme.example');
    const detail = await request(server.httpUrl, 'GET', `/v1/emails/${res.body.id}`, { key });
    assert.deepEqual(detail.body.recipients.map((r: { email: string }) => r.email).sort(), [
      'ann@example.org',
      'carl@example.org',
      'secret@example.org',
    ]);
    assert.deepEqual(detail.body.tags, ['category:welcome', 'onboarding']);
    assert.equal(detail.body.template_id, template.body.id);
  });

  it('sends one template to many recipients, each with its own variables', async () => {
    const template = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: { name: 't', subject: 'For {{name}}', html: '<p>{{name}}</p>' },
    });
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: {
        from: 'news@acme.example',
        template_id: template.body.id,
        type: 'marketing',
        recipients: [
          { to: 'a@example.org', variables: { name: 'Alpha' } },
          { to: 'b@example.org', variables: { name: 'Beta' } },
        ],
      },
    });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.data.length, 2);
    const subjects = await Promise.all(res.body.data.map(async (d: { id: string }) => (await raw(d.id)).subject));
    assert.deepEqual(subjects, ['For Alpha', 'For Beta']);
    assert.equal(res.headers.get('x-ratelimit-limit'), '500', 'marketing limit shown');
  });

  it('validates a batch all-or-nothing', async () => {
    const before = await request(server.httpUrl, 'GET', '/v1/emails?limit=100', { key });
    const bad = await request(server.httpUrl, 'POST', '/v1/emails/batch', {
      key,
      body: [
        { from: 'hello@acme.example', to: 'x@example.org', subject: 's', html: '<p>1</p>' },
        { from: 'hello@acme.example', to: 'not-an-address', subject: 's', html: '<p>2</p>' },
      ],
    });
    assert.equal(bad.status, 400, show(bad));
    assert.equal(bad.body.error.message, '[1].to: "not-an-address" is not a valid email address');
    const afterBad = await request(server.httpUrl, 'GET', '/v1/emails?limit=100', { key });
    assert.equal(afterBad.body.data.length, before.body.data.length, 'nothing queued');
    const good = await request(server.httpUrl, 'POST', '/v1/emails/batch', {
      key,
      body: [
        { from: 'hello@acme.example', to: 'x@example.org', subject: 's', html: '<p>1</p>' },
        { from: 'hello@acme.example', to: 'y@example.org', subject: 's', text: 'plain only' },
      ],
    });
    assert.equal(good.status, 200, show(good));
    assert.equal(good.body.data.length, 2);
    const tooMany = await request(server.httpUrl, 'POST', '/v1/emails/batch', {
      key,
      body: Array(101).fill({ from: 'hello@acme.example', to: 'x@example.org', subject: 's', html: 'h' }),
    });
    assert.equal(tooMany.status, 400);
  });

  it('refuses an unverified sender with 403 in each envelope', async () => {
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'pending.example' });
    const legacy = await request(server.httpUrl, 'POST', '/api/v1/send', {
      key,
      body: { to: 'a@example.org', subject: 's', html: 'h', from_email: 'me@pending.example' },
    });
    assert.equal(legacy.status, 403, show(legacy));
    assert.equal(legacy.body.code, 'FORBIDDEN');
    const v1 = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'me@elsewhere.example', to: 'a@example.org', subject: 's', html: 'h' },
    });
    assert.equal(v1.status, 403, show(v1));
    assert.equal(v1.body.error.code, 'forbidden');
    // A test key may use a domain that is added but not yet verified: try the pipeline first.
    const testKey = await server.key({ test: true });
    const simulated = await request(server.httpUrl, 'POST', '/v1/emails', {
      key: testKey,
      body: { from: 'me@pending.example', to: 'a@example.org', subject: 's', html: 'h' },
    });
    assert.equal(simulated.status, 200, show(simulated));
    const detail = await request(server.httpUrl, 'GET', `/v1/emails/${simulated.body.id}`, { key });
    assert.equal(detail.body.test, true);
  });

  it('refuses header injection and bad input with a 400 naming the field', async () => {
    const cases: Array<[string, string, unknown, RegExp]> = [
      [
        '/api/v1/send',
        'legacy',
        { to: 'a@example.org', subject: 'Hi\r\nBcc: victim@example.org', html: 'h' },
        /^subject: must not contain line breaks$/,
      ],
      [
        '/api/v1/send',
        'legacy',
        { to: 'a@example.org', subject: 's', html: 'h', from_name: 'Eve\nBcc: x@y.z', from_email: 'john@acme.example' },
        /^from_name:/,
      ],
      ['/api/v1/send', 'legacy', { to: 'a@example.org\r\nBcc: v@example.org', subject: 's', html: 'h' }, /^to:/],
      ['/api/v1/send', 'legacy', { to: 'a@example.org', subject: 's' }, /^html: is required if templateId is absent$/],
      [
        '/api/v1/send',
        'legacy',
        { to: 'a@example.org', subject: 's', html: 'h', templateId: '01a200af-0000-7000-8000-000000000000' },
        /^templateId:/,
      ],
      ['/api/v1/send', 'legacy', { subject: 's', html: 'h' }, /^to: is required$/],
      [
        '/api/v1/send',
        'legacy',
        { to: 'a@example.org', subject: 's', templateId: '01a200af-0000-7000-8000-000000000000' },
        /^templateId: template .* not found$/,
      ],
      ['/api/v1/send', 'legacy', { to: 'a@example.org', subject: 's', html: 'h', type: 'bulk' }, /^type:/],
      [
        '/api/v1/send',
        'legacy',
        {
          to: 'a@example.org',
          subject: 's',
          html: 'h',
          attachments: [{ filename: 'a', content: '!!notbase64', contentType: 'text/plain' }],
        },
        /^attachments\[0\]\.content: must be base64$/,
      ],
      [
        '/api/v1/send',
        'legacy',
        { to: 'a@example.org', subject: 's', html: 'h', attachments: [{ filename: 'a', contentType: 'text/plain' }] },
        /^attachments\[0\]: needs exactly one of content or url$/,
      ],
      [
        '/api/v1/send',
        'legacy',
        { to: 'a@example.org', subject: 's', html: 'h', attachments: [{ filename: 'a', content: 'YQ==' }] },
        /^attachments\[0\]\.contentType: is required$/,
      ],
      [
        '/api/v1/send',
        'legacy',
        {
          to: 'a@example.org',
          subject: 's',
          html: 'h',
          attachments: Array(6).fill({ filename: 'a', content: 'YQ==', contentType: 'text/plain' }),
        },
        /^attachments: at most 5 attachments$/,
      ],
      [
        '/v1/emails',
        'v1',
        {
          from: 'hello@acme.example',
          to: 'a@example.org',
          subject: 's',
          html: 'h',
          headers: { 'X-Ok': 'a\r\nBcc: x@y.z' },
        },
        /^headers\.X-Ok:/,
      ],
      [
        '/v1/emails',
        'v1',
        {
          from: 'hello@acme.example',
          to: 'a@example.org',
          subject: 's',
          html: 'h',
          headers: { From: 'ceo@bank.example' },
        },
        /^headers\.From: is set by mailsvc/,
      ],
      [
        '/v1/emails',
        'v1',
        { from: 'hello@acme.example', to: 'a@example.org', subject: 's', html: 'h', headers: { 'Bad Name': 'x' } },
        /^headers\.Bad Name: is not a valid header name$/,
      ],
      [
        '/v1/emails',
        'v1',
        { from: 'Eve\r\n <hello@acme.example>', to: 'a@example.org', subject: 's', html: 'h' },
        /^from:/,
      ],
      [
        '/v1/emails',
        'v1',
        { from: 'a@acme.example, b@acme.example', to: 'a@example.org', subject: 's', html: 'h' },
        /^from: .* must be one address/,
      ],
      [
        '/v1/emails',
        'v1',
        {
          from: 'hello@acme.example',
          to: Array(51)
            .fill(0)
            .map((_, i) => `r${i}@example.org`),
          subject: 's',
          html: 'h',
        },
        /^to:/,
      ],
      ['/v1/emails', 'v1', { from: 'hello@acme.example', to: 'a@example.org', html: 'h' }, /^subject: is required$/],
      ['/v1/emails', 'v1', { from: 'hello@acme.example', to: 'a@example.org', subject: 's' }, /^html: is required/],
      [
        '/v1/emails',
        'v1',
        { from: 'hello@acme.example', to: 'a@example.org', subject: 's', html: 'h', scheduled_at: 'tomorrow' },
        /^scheduled_at: must be an ISO 8601/,
      ],
      [
        '/v1/emails',
        'v1',
        {
          from: 'hello@acme.example',
          to: 'a@example.org',
          subject: 's',
          html: 'h',
          metadata: { big: 'x'.repeat(9000) },
        },
        /^metadata: must be at most/,
      ],
      [
        '/v1/emails',
        'v1',
        {
          from: 'hello@acme.example',
          to: 'a@example.org',
          subject: 's',
          html: 'h',
          attachments: [{ filename: 'a', content: 'YQ==', content_type: 'text/plain\r\nX: y' }],
        },
        /^attachments\[0\]\.contentType:/,
      ],
    ];
    for (const [path, surface, body, message] of cases) {
      const res = await request(server.httpUrl, 'POST', path, { key, body });
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 120)} -> ${show(res)}`);
      if (surface === 'legacy') {
        assert.equal(res.body.code, 'VALIDATION_ERROR');
        assert.match(res.body.error, message);
      } else {
        assert.equal(res.body.error.code, 'validation_error');
        assert.match(res.body.error.message, message);
      }
    }
    const unknownTemplate = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'hello@acme.example', to: 'a@example.org', template_id: '01a200af-0000-7000-8000-000000000000' },
    });
    assert.equal(unknownTemplate.status, 404, 'an unknown template is 404 on /v1');
  });

  it('fetches attachment URLs at send time, within the size cap and the network policy', async () => {
    const files = createServer((req, res) => {
      if (req.url === '/report.pdf') return res.end(Buffer.from('%PDF-1.4 quarterly'));
      if (req.url === '/big.bin') return res.end(Buffer.alloc(5 * 1024 * 1024 + 10, 1));
      res.statusCode = 404;
      res.end('no');
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    const port = (files.address() as AddressInfo).port;
    dns.set('files.acme.example', 'A', ['127.0.0.1']);
    try {
      const attach = (path: string) => [
        { filename: 'f.pdf', url: `http://files.acme.example:${port}${path}`, contentType: 'application/pdf' },
      ];
      const ok = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: {
          from: 'hello@acme.example',
          to: 'a@example.org',
          subject: 's',
          html: 'h',
          attachments: [
            {
              filename: 'r.pdf',
              path: `http://files.acme.example:${port}/report.pdf`,
              content_type: 'application/pdf',
            },
          ],
        },
      });
      assert.equal(ok.status, 200, show(ok));
      const mail = await raw(ok.body.id);
      assert.equal(mail.attachments[0]!.content.toString(), '%PDF-1.4 quarterly');
      const missing = await request(server.httpUrl, 'POST', '/api/v1/send', {
        key,
        body: { to: 'a@example.org', subject: 's', html: 'h', attachments: attach('/nope') },
      });
      assert.equal(missing.status, 400, show(missing));
      assert.match(missing.body.error, /^attachments\[0\]\.url: could not be fetched: the server answered HTTP 404$/);
      const big = await request(server.httpUrl, 'POST', '/api/v1/send', {
        key,
        body: { to: 'a@example.org', subject: 's', html: 'h', attachments: attach('/big.bin') },
      });
      assert.equal(big.status, 400);
      assert.match(big.body.error, /^attachments\[0\]\.url: is larger than 5 MB$/);

      // With the default policy, a URL that resolves to loopback is refused before connecting.
      const strict = await startTestServer({ delivery: { dnsServers: [dns.server], enabled: false } });
      try {
        const k = await strict.key({ test: true });
        await strict.runtime.services.domains.add(strict.workspaceId, { domain: 'acme.example' });
        const before = files.listenerCount('request');
        let hits = 0;
        files.on('request', () => hits++);
        const refused = await request(strict.httpUrl, 'POST', '/api/v1/send', {
          key: k,
          body: {
            to: 'a@example.org',
            subject: 's',
            html: 'h',
            from_email: 'x@acme.example',
            attachments: attach('/report.pdf'),
          },
        });
        assert.equal(refused.status, 400, show(refused));
        assert.match(refused.body.error, /^attachments\[0\]\.url: /);
        assert.equal(hits, 0, 'no connection was made');
        assert.ok(before >= 1);
      } finally {
        await strict.close();
      }
    } finally {
      files.close();
    }
  });

  it('refuses attachments over 5 MB each or 7 MB together', async () => {
    const three = Buffer.alloc(3 * 1024 * 1024, 1).toString('base64');
    const six = Buffer.alloc(5 * 1024 * 1024 + 1, 1).toString('base64');
    const one = (content: string) => ({ filename: 'f.bin', content, contentType: 'application/octet-stream' });
    const big = await request(server.httpUrl, 'POST', '/api/v1/send', {
      key,
      body: { to: 'a@example.org', subject: 's', html: 'h', attachments: [one(six)] },
    });
    assert.equal(big.status, 400, show(big));
    assert.match(big.body.error, /larger than 5 MB/);
    const total = await request(server.httpUrl, 'POST', '/api/v1/send', {
      key,
      body: { to: 'a@example.org', subject: 's', html: 'h', attachments: [one(three), one(three), one(three)] },
    });
    assert.equal(total.status, 400, show(total));
    assert.match(total.body.error, /larger than 7 MB together/);
  });

  it('schedules and cancels', async () => {
    const at = new Date(Date.now() + 3600_000).toISOString();
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'hello@acme.example', to: 'a@example.org', subject: 's', html: 'h', scheduled_at: at },
    });
    assert.equal(res.body.status, 'scheduled', show(res));
    const cancelled = await request(server.httpUrl, 'POST', `/v1/emails/${res.body.id}/cancel`, { key });
    assert.equal(cancelled.status, 200, show(cancelled));
    assert.equal(cancelled.body.status, 'cancelled');
    const again = await request(server.httpUrl, 'POST', `/v1/emails/${res.body.id}/cancel`, { key });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'invalid_state');
    const missing = await request(server.httpUrl, 'POST', `/v1/emails/01a200af-0000-7000-8000-000000000000/cancel`, {
      key,
    });
    assert.equal(missing.status, 404);
  });
});
