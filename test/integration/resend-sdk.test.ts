import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import type { Resend } from 'resend';
import { Webhook } from 'svix';
import { eventually, routeDomain, verifyDkim } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { failed, hasFields, ok, publishDomain, resendClient } from '../helpers/resend.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { tampered } from '../helpers/http.js';

/**
 * An application written against Resend, with only its base URL changed: every call goes
 * through the official SDK (pinned in package.json) to a real server on loopback, which
 * delivers to a loopback MX through a loopback DNS server.
 */
describe('the Resend SDK against mailsvc: emails, domains, API keys, templates, suppressions, webhooks', () => {
  let dns: TestDns;
  let mx: TestMx;
  let hooks: WebhookReceiver;
  let files: Server;
  let filesUrl: string;
  let server: TestServer;
  let resend: Resend;
  let domainId: string;

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    hooks = await startWebhookReceiver();
    // Serves a file for an attachment given by `path`.
    files = createServer((req, res) => {
      if (req.url === '/files/report.csv') res.writeHead(200, { 'content-type': 'text/csv' }).end('a,b\n1,2\n');
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], port: mx.port, retrySchedule: [1], pollInterval: 50, signingThreads: 1 },
      webhooks: { allowPrivateNetworks: true, schedule: [1], pollInterval: 20 },
      attachments: { allowPrivateNetworks: true },
      http: { publicUrl: 'http://127.0.0.1:1' },
    });
    resend = resendClient(server, await server.key());
    routeDomain(dns, 'example.org', [{ name: 'mx.example.org', preference: 10, a: ['127.0.0.1'] }]);
  });
  after(async () => {
    await server.close();
    await new Promise<void>((resolve) => files.close(() => resolve()));
    await hooks.close();
    await mx.close();
    await dns.close();
  });

  it('adds, reads, verifies, lists and removes domains in the SDK shape', async () => {
    const created = ok(await resend.domains.create({ name: 'acme.example' }), 'domains.create');
    hasFields(
      created,
      {
        id: 'string',
        name: 'string',
        status: 'string',
        created_at: 'string',
        region: 'string',
        records: 'array',
        capabilities: 'object',
      },
      'CreateDomainResponseSuccess',
    );
    assert.equal(created.name, 'acme.example');
    assert.equal(created.status, 'pending');
    // The SPEC's shape is there too.
    assert.equal((created as unknown as { domain_name: string }).domain_name, 'acme.example');
    const dkim = created.records.filter((r) => r.record === 'DKIM');
    assert.equal(dkim.length, 3);
    for (const r of created.records)
      hasFields(
        r,
        { record: 'string', name: 'string', type: 'string', ttl: 'string', status: 'string', value: 'string' },
        'DomainRecords',
      );
    assert.ok(
      dkim.every(
        (r) => r.type === 'CNAME' && r.status === 'not_started' && r.name.endsWith('._domainkey.acme.example'),
      ),
    );
    domainId = created.id;

    const notYet = ok(await resend.domains.verify(domainId), 'domains.verify');
    assert.equal(notYet.id, domainId);
    assert.equal(notYet.object, 'domain');
    const failing = ok(await resend.domains.get(domainId), 'domains.get');
    assert.equal(failing.status, 'pending');
    assert.ok(
      failing.records.filter((r) => r.record === 'DKIM').every((r) => r.status === 'failed'),
      'each DKIM record names its failed check',
    );

    await publishDomain(server, dns, 'acme.example');
    ok(await resend.domains.verify(domainId), 'domains.verify');
    const verified = ok(await resend.domains.get(domainId), 'domains.get');
    hasFields(
      verified,
      {
        object: 'string',
        id: 'string',
        name: 'string',
        created_at: 'string',
        region: 'string',
        status: 'string',
        capabilities: 'object',
        records: 'array',
      },
      'GetDomainResponseSuccess',
    );
    assert.equal(verified.status, 'verified');
    assert.ok(verified.records.filter((r) => r.record === 'DKIM').every((r) => r.status === 'verified'));

    const other = ok(await resend.domains.create({ name: 'other.example' }), 'domains.create');
    const list = ok(await resend.domains.list(), 'domains.list');
    assert.equal(list.object, 'list');
    assert.equal(list.has_more, false);
    assert.deepEqual(list.data.map((d) => d.name).sort(), ['acme.example', 'other.example']);
    for (const d of list.data)
      hasFields(
        d,
        {
          id: 'string',
          name: 'string',
          status: 'string',
          created_at: 'string',
          region: 'string',
          capabilities: 'object',
        },
        'Domain',
      );
    const removed = ok(await resend.domains.remove(other.id), 'domains.remove');
    assert.deepEqual(removed, { object: 'domain', id: other.id, deleted: true });
    failed(await resend.domains.get(other.id), 404, 'not_found');
    failed(await resend.domains.create({ name: 'acme.example' }), 409, 'validation_error', /already exists/);
  });

  it('sends with attachments (content_type inferred, path), tags, headers and replyTo; the mail arrives DKIM-signed', async () => {
    const sent = ok(
      await resend.emails.send({
        from: 'Acme <hello@acme.example>',
        to: ['ann@example.org'],
        subject: 'Your report',
        html: '<p>Attached <img src="cid:logo-1"></p>',
        text: 'Attached',
        replyTo: 'support@acme.example',
        headers: { 'X-Entity-Ref-ID': '123' },
        tags: [{ name: 'category', value: 'report' }],
        attachments: [
          { filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4 fake') },
          { path: `${filesUrl}/files/report.csv` },
          {
            filename: 'logo.png',
            content: Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64'),
            contentId: 'logo-1',
          },
        ],
      }),
      'emails.send',
    );
    hasFields(sent, { id: 'string' }, 'CreateEmailResponseSuccess');
    const [message] = await mx.waitFor(1);
    assert.deepEqual(message!.to, ['ann@example.org']);
    const dkim = await verifyDkim(message!.raw, dns);
    assert.ok(
      dkim.some(
        (r: { status: { result: string }; signingDomain: string }) =>
          r.status.result === 'pass' && r.signingDomain === 'acme.example',
      ),
      'DKIM passes for the sending domain',
    );
    const parsed = await simpleParser(message!.raw);
    assert.equal(parsed.replyTo?.text, 'support@acme.example');
    assert.equal(parsed.headers.get('x-entity-ref-id'), '123');
    const types = Object.fromEntries(parsed.attachments.map((a) => [a.filename, a.contentType]));
    assert.deepEqual(types, { 'invoice.pdf': 'application/pdf', 'report.csv': 'text/csv', 'logo.png': 'image/png' });
    assert.equal(parsed.attachments.find((a) => a.filename === 'report.csv')!.content.toString(), 'a,b\n1,2\n');
    assert.equal(parsed.attachments.find((a) => a.filename === 'logo.png')!.cid, 'logo-1');

    const email = ok(await resend.emails.get(sent.id), 'emails.get');
    hasFields(
      email,
      {
        object: 'string',
        id: 'string',
        to: 'array',
        from: 'string',
        created_at: 'string',
        subject: 'string',
        html: 'string|null',
        text: 'string|null',
        bcc: 'array|null',
        cc: 'array|null',
        reply_to: 'array|null',
        last_event: 'string',
        message_id: 'string',
        scheduled_at: 'string|null',
      },
      'GetEmailResponseSuccess',
    );
    assert.equal(email.subject, 'Your report');
    assert.match(email.html ?? '', /Attached/);
    assert.deepEqual(email.reply_to, ['support@acme.example']);
    await eventually(
      async () => (ok(await resend.emails.get(sent.id)).last_event === 'delivered' ? true : undefined),
      120_000,
      'delivered',
    );

    const attachments = ok(await resend.emails.attachments.list({ emailId: sent.id }), 'emails.attachments.list');
    assert.equal(attachments.object, 'list');
    assert.equal(attachments.data.length, 3);
    for (const a of attachments.data) {
      hasFields(
        a,
        {
          id: 'string',
          size: 'number',
          content_type: 'string',
          content_disposition: 'string',
          download_url: 'string',
          expires_at: 'string',
        },
        'AttachmentData',
      );
    }
    const pdf = attachments.data.find((a) => a.filename === 'invoice.pdf')!;
    const one = ok(await resend.emails.attachments.get({ emailId: sent.id, id: pdf.id }), 'emails.attachments.get');
    assert.equal(one.object, 'attachment');
    // The link is on http.publicUrl; the same path on the server under test serves the file.
    const download = await fetch(`${server.httpUrl}${new URL(one.download_url).pathname}`);
    assert.equal(download.status, 200);
    assert.equal(download.headers.get('content-type'), 'application/pdf');
    assert.match(download.headers.get('content-disposition') ?? '', /attachment; filename="invoice.pdf"/);
    assert.equal(Buffer.from(await download.arrayBuffer()).toString(), '%PDF-1.4 fake');
    const path = new URL(one.download_url).pathname;
    const forged = await fetch(`${server.httpUrl}${tampered(path)}`);
    assert.equal(forged.status, 404, 'a tampered link serves nothing');
    failed(await resend.emails.attachments.get({ emailId: sent.id, id: 'att_9' }), 404, 'not_found');

    const list = ok(await resend.emails.list({ limit: 10 }), 'emails.list');
    assert.equal(list.object, 'list');
    const listed = list.data.find((e) => e.id === sent.id)!;
    hasFields(
      listed,
      {
        id: 'string',
        to: 'array',
        from: 'string',
        created_at: 'string',
        subject: 'string',
        bcc: 'array|null',
        cc: 'array|null',
        reply_to: 'array|null',
        last_event: 'string',
        message_id: 'string',
        scheduled_at: 'string|null',
      },
      'ListEmail',
    );
  });

  it('refuses a bad attachment with a 400 the SDK reports', async () => {
    failed(
      await resend.emails.send({
        from: 'hello@acme.example',
        to: 'ann@example.org',
        subject: 's',
        html: 'h',
        attachments: [{ filename: 'a.txt', content: 'not base64!' }],
      }),
      400,
      'validation_error',
      /attachments\[0\]\.content: must be base64/,
    );
    failed(
      await resend.emails.send({
        from: 'hello@acme.example',
        to: 'ann@example.org',
        subject: 's',
        html: 'h',
        attachments: [{ content: 'aGk=' }],
      }),
      400,
      'validation_error',
      /attachments\[0\]\.filename/,
    );
    // An unknown extension is still an attachment: application/octet-stream.
    const sent = ok(
      await resend.emails.send({
        from: 'hello@acme.example',
        to: 'ann@example.org',
        subject: 's',
        html: 'h',
        attachments: [{ filename: 'data.zzz', content: 'aGk=' }],
      }),
    );
    const listed = ok(await resend.emails.attachments.list({ emailId: sent.id }));
    assert.equal(listed.data[0]!.content_type, 'application/octet-stream');
  });

  it('batches, strictly and permissively, with an idempotency key', async () => {
    const batch = [
      { from: 'hello@acme.example', to: 'b1@example.org', subject: 'One', html: '<p>1</p>' },
      { from: 'hello@acme.example', to: 'b2@example.org', subject: 'Two', text: '2' },
    ];
    const first = ok(await resend.batch.send(batch, { idempotencyKey: 'batch-1' }), 'batch.send');
    assert.equal(first.data.length, 2);
    const again = ok(await resend.batch.send(batch, { idempotencyKey: 'batch-1' }), 'batch.send replay');
    assert.deepEqual(
      again.data.map((d) => d.id),
      first.data.map((d) => d.id),
      'the same key replays the answer',
    );
    failed(await resend.batch.send([batch[0]!], { idempotencyKey: 'batch-1' }), 409, 'invalid_idempotent_request');
    // Wait for these two by address: mail of earlier tests may still be arriving at the same MX.
    const arrived = (address: string) => mx.messages.some((m) => m.to[0] === address);
    await eventually(async () => arrived('b1@example.org') && arrived('b2@example.org'), 120_000, 'two messages');
    assert.equal(mx.messages.filter((m) => m.to[0] === 'b1@example.org').length, 1, 'sent once');

    failed(
      await resend.batch.send([
        ...batch,
        { from: 'hello@nowhere.example', to: 'b3@example.org', subject: 'x', html: 'x' },
      ]),
      403,
      'invalid_access',
      /^\[2\]\.from:/,
    );
    const permissive = ok(
      await resend.batch.send(
        [
          { from: 'hello@acme.example', to: 'b4@example.org', subject: 'ok', html: 'ok' },
          { from: 'hello@acme.example', to: 'not-an-address', subject: 'x', html: 'x' },
        ],
        { batchValidation: 'permissive' },
      ),
      'batch.send permissive',
    );
    assert.equal(permissive.data.length, 1);
    assert.equal(permissive.errors.length, 1);
    assert.equal(permissive.errors[0]!.index, 1);
    assert.match(permissive.errors[0]!.message, /^to:/);
  });

  it('schedules (ISO or in words), reschedules and cancels', async () => {
    const at = new Date(Date.now() + 3600_000).toISOString();
    const scheduled = ok(
      await resend.emails.send({
        from: 'hello@acme.example',
        to: 'later@example.org',
        subject: 'Later',
        html: 'l',
        scheduledAt: at,
      }),
      'emails.send scheduled',
    );
    const got = ok(await resend.emails.get(scheduled.id));
    assert.equal(got.last_event, 'scheduled');
    assert.equal(got.scheduled_at, at);
    const moved = ok(await resend.emails.update({ id: scheduled.id, scheduledAt: 'in 2 hours' }), 'emails.update');
    assert.deepEqual({ id: moved.id, object: moved.object }, { id: scheduled.id, object: 'email' });
    const after = ok(await resend.emails.get(scheduled.id));
    assert.ok(Math.abs(Date.parse(after.scheduled_at!) - (Date.now() + 7200_000)) < 60_000, 'two hours from now');
    const cancelled = ok(await resend.emails.cancel(scheduled.id), 'emails.cancel');
    assert.deepEqual({ id: cancelled.id, object: cancelled.object }, { id: scheduled.id, object: 'email' });
    assert.equal(ok(await resend.emails.get(scheduled.id)).last_event, 'canceled');
    failed(
      await resend.emails.update({ id: scheduled.id, scheduledAt: 'in 1 hour' }),
      409,
      'validation_error',
      /only a scheduled email/,
    );
    failed(
      await resend.emails.update({ id: scheduled.id, scheduledAt: 'next tuesday' }),
      400,
      'validation_error',
      /scheduled_at/,
    );
    assert.equal(mx.messages.filter((m) => m.to.includes('later@example.org')).length, 0, 'never sent');
  });

  it('creates, lists and removes API keys; a sending key sends from its domain only', async () => {
    const full = ok(await resend.apiKeys.create({ name: 'ci' }), 'apiKeys.create');
    hasFields(full, { id: 'string', token: 'string' }, 'CreateApiKeyResponseSuccess');
    assert.match(full.token, /^sk_live_/);
    const sending = ok(
      await resend.apiKeys.create({ name: 'sender', permission: 'sending_access', domain_id: domainId }),
      'apiKeys.create sending',
    );
    const list = ok(await resend.apiKeys.list(), 'apiKeys.list');
    assert.equal(list.object, 'list');
    for (const k of list.data)
      hasFields(k, { id: 'string', name: 'string', created_at: 'string', last_used_at: 'string|null' }, 'ApiKey');
    const listedSending = list.data.find((k) => k.id === sending.id) as unknown as {
      permission: string;
      domain_id: string;
    };
    assert.equal(listedSending.permission, 'sending_access');
    assert.equal(listedSending.domain_id, domainId);
    assert.ok(!JSON.stringify(list).includes(full.token), 'the key is never shown again');

    const sender = resendClient(server, sending.token);
    ok(
      await sender.emails.send({ from: 'hello@acme.example', to: 'k@example.org', subject: 'k', html: 'k' }),
      'send with a sending key',
    );
    failed(await sender.domains.list(), 403, 'invalid_access', /sending access only/);
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'second.example' });
    await publishDomain(server, dns, 'second.example');
    await server.runtime.services.domains.verify(server.workspaceId, 'second.example');
    failed(
      await sender.emails.send({ from: 'hello@second.example', to: 'k@example.org', subject: 'k', html: 'k' }),
      403,
      'invalid_access',
      /only from one domain/,
    );
    ok(
      await resendClient(server, full.token).emails.send({
        from: 'hello@second.example',
        to: 'k@example.org',
        subject: 'k',
        html: 'k',
      }),
      'a full key sends from any domain',
    );

    failed(
      await resend.apiKeys.create({ name: 'x', permission: 'full_access', domain_id: domainId }),
      400,
      'validation_error',
      /^domain_id:/,
    );
    ok(await resend.apiKeys.update(full.id, { name: 'ci-renamed' }), 'apiKeys.update');
    const removed = ok(await resend.apiKeys.remove(full.id), 'apiKeys.remove');
    hasFields(removed, { object: 'string', id: 'string', deleted: 'boolean' }, 'RemoveApiKeyResponseSuccess');
    failed(await resendClient(server, full.token).domains.list(), 401, 'invalid_api_key');
    // The CLI and the dashboard read the same records.
    const viaService = await server.runtime.services.credentials.list({
      workspaceId: server.workspaceId,
      oauth: false,
    });
    assert.equal(viaService.find((k) => k.id === full.id)?.name, 'ci-renamed');
    assert.ok(viaService.find((k) => k.id === full.id)?.revoked_at);
  });

  it('creates, publishes and sends templates; mail keeps the published version until the next publish', async () => {
    const created = ok(
      await resend.templates.create({
        name: 'welcome',
        alias: 'welcome-mail',
        subject: 'Welcome {{{NAME}}}',
        html: '<p>Hi {{{NAME}}}, your plan is {{{PLAN}}}</p>',
        from: 'Acme <hello@acme.example>',
        replyTo: 'help@acme.example',
        variables: [
          { key: 'NAME', type: 'string' },
          { key: 'PLAN', type: 'string', fallbackValue: 'free' },
        ],
      }),
      'templates.create',
    );
    hasFields(created, { id: 'string', object: 'string' }, 'CreateTemplateResponseSuccess');
    const got = ok(await resend.templates.get('welcome-mail'), 'templates.get by alias');
    hasFields(
      got,
      {
        object: 'string',
        id: 'string',
        name: 'string',
        subject: 'string|null',
        html: 'string',
        text: 'string|null',
        status: 'string',
        variables: 'array|null',
        alias: 'string|null',
        from: 'string|null',
        reply_to: 'array|null',
        published_at: 'string|null',
        created_at: 'string',
        updated_at: 'string',
        has_unpublished_versions: 'boolean',
        current_version_id: 'string',
      },
      'GetTemplateResponseSuccess',
    );
    assert.equal(got.status, 'draft');
    const published = ok(await resend.templates.publish(created.id), 'templates.publish');
    assert.equal(published.id, created.id);
    ok(await resend.templates.update(created.id, { html: '<p>Changed {{{NAME}}}</p>' }), 'templates.update');
    const changed = ok(await resend.templates.get(created.id));
    assert.equal(changed.status, 'published');
    assert.equal(changed.has_unpublished_versions, true);

    // No `from` and no `subject`: the template's.
    const sent = ok(
      await resend.emails.send({ to: 'tpl@example.org', template: { id: 'welcome-mail', variables: { NAME: 'Ann' } } }),
      'send with a template',
    );
    const [message] = await eventually<typeof mx.messages>(
      async () => {
        const m = mx.messages.filter((x) => x.to.includes('tpl@example.org'));
        return m.length > 0 ? m : undefined;
      },
      15_000,
      'the template mail',
    );
    const parsed = await simpleParser(message!.raw);
    assert.equal(parsed.subject, 'Welcome Ann');
    assert.match(parsed.html || '', /Hi Ann, your plan is free/, 'the published version, with the fallback value');
    assert.deepEqual(
      parsed.from?.value.map((a) => [a.name, a.address]),
      [['Acme', 'hello@acme.example']],
    );
    assert.equal(parsed.replyTo?.value[0]?.address, 'help@acme.example', "the template's reply-to");
    assert.ok(sent.id);

    const copy = ok(await resend.templates.duplicate(created.id), 'templates.duplicate');
    assert.notEqual(copy.id, created.id);
    const list = ok(await resend.templates.list({ limit: 1 }), 'templates.list');
    assert.equal(list.object, 'list');
    assert.equal(list.data.length, 1);
    assert.equal(list.has_more, true);
    hasFields(
      list.data[0],
      {
        id: 'string',
        name: 'string',
        created_at: 'string',
        updated_at: 'string',
        status: 'string',
        published_at: 'string|null',
        alias: 'string|null',
      },
      'TemplateListItem',
    );
    const next = ok(await resend.templates.list({ limit: 1, after: list.data[0]!.id }));
    assert.notEqual(next.data[0]!.id, list.data[0]!.id, 'the cursor moves on');
    const removed = ok(await resend.templates.remove(copy.id), 'templates.remove');
    assert.deepEqual(removed, { object: 'template', id: copy.id, deleted: true });
    failed(
      await resend.templates.create({ name: 'bad', html: '<p>x</p>', alias: 'welcome-mail' }),
      409,
      'validation_error',
      /alias/,
    );
  });

  it('adds, reads, lists and removes suppressions in the SDK shape; a suppressed address is not sent to', async () => {
    const added = ok(await resend.suppressions.add({ email: 'Blocked@Example.org' }), 'suppressions.add');
    assert.deepEqual({ object: added.object, id: added.id }, { object: 'suppression', id: 'blocked@example.org' });
    const got = ok(await resend.suppressions.get('blocked@example.org'), 'suppressions.get');
    hasFields(
      got,
      {
        object: 'string',
        id: 'string',
        email: 'string',
        origin: 'string',
        source_id: 'string|null',
        created_at: 'string',
      },
      'Suppression',
    );
    assert.equal(got.origin, 'manual');
    const batch = ok(
      await resend.suppressions.batch.add({ emails: ['x1@example.org', 'x2@example.org'] }),
      'suppressions.batch.add',
    );
    assert.deepEqual(
      batch.data.map((d) => d.id),
      ['x1@example.org', 'x2@example.org'],
    );
    const manual = ok(await resend.suppressions.list({ origin: 'manual', limit: 2 }), 'suppressions.list');
    assert.equal(manual.data.length, 2);
    assert.equal(manual.has_more, true);
    const rest = ok(await resend.suppressions.list({ origin: 'manual', limit: 2, after: manual.data[1]!.id }));
    assert.equal(rest.data.length, 1);
    assert.equal(rest.has_more, false);
    assert.deepEqual(
      new Set([...manual.data, ...rest.data].map((s) => s.email)),
      new Set(['blocked@example.org', 'x1@example.org', 'x2@example.org']),
    );
    assert.equal(ok(await resend.suppressions.list({ origin: 'bounce' })).data.length, 0);

    const sent = ok(
      await resend.emails.send({ from: 'hello@acme.example', to: 'blocked@example.org', subject: 's', html: 'h' }),
    );
    await eventually(
      async () => (ok(await resend.emails.get(sent.id)).last_event === 'suppressed' ? true : undefined),
      120_000,
      'suppressed',
    );
    assert.equal(mx.messages.filter((m) => m.to.includes('blocked@example.org')).length, 0);

    const removed = ok(await resend.suppressions.remove('blocked@example.org'), 'suppressions.remove');
    assert.deepEqual({ id: removed.id, deleted: removed.deleted }, { id: 'blocked@example.org', deleted: true });
    const batchRemoved = ok(
      await resend.suppressions.batch.remove({ emails: ['x1@example.org', 'nobody@example.org'] }),
      'suppressions.batch.remove',
    );
    assert.deepEqual(
      batchRemoved.data.map((d) => d.deleted),
      [true, false],
    );
    failed(await resend.suppressions.get('blocked@example.org'), 404, 'not_found');
  });

  it('registers a webhook with `endpoint`; its deliveries verify with svix; events, attempts, replay, rotation', async () => {
    const created = ok(
      await resend.webhooks.create({ endpoint: `${hooks.url}/resend`, events: ['email.sent', 'email.delivered'] }),
      'webhooks.create',
    );
    hasFields(created, { object: 'string', id: 'string', signing_secret: 'string' }, 'CreateWebhookResponseSuccess');
    assert.match(created.signing_secret, /^whsec_/);

    const sent = ok(
      await resend.emails.send({
        from: 'hello@acme.example',
        to: 'hooked@example.org',
        subject: 'Hooked',
        html: 'h',
        tags: [{ name: 'kind', value: 'test' }],
      }),
    );
    const received = await hooks.waitFor(2, (r) => r.path === '/resend' && r.json?.data?.email_id === sent.id, 20_000);
    const wh = new Webhook(created.signing_secret);
    for (const r of received) {
      const payload = wh.verify(r.body, {
        'svix-id': String(r.headers['webhook-id']),
        'svix-timestamp': String(r.headers['webhook-timestamp']),
        'svix-signature': String(r.headers['webhook-signature']),
      }) as { type: string; data: Record<string, unknown> };
      assert.ok(['email.sent', 'email.delivered'].includes(payload.type));
      // Handler code that passes the request's headers as they come verifies too: svix reads webhook-* when svix-* are absent.
      assert.deepEqual(wh.verify(r.body, r.headers as Record<string, string>), payload);
      hasFields(
        payload.data,
        {
          email_id: 'string',
          created_at: 'string',
          from: 'string',
          to: 'array',
          subject: 'string',
          message_id: 'string',
        },
        'BaseEmailEventData',
      );
      // The SDK's own verifier agrees.
      resend.webhooks.verify({
        payload: r.body,
        headers: {
          id: String(r.headers['webhook-id']),
          timestamp: String(r.headers['webhook-timestamp']),
          signature: String(r.headers['webhook-signature']),
        },
        webhookSecret: created.signing_secret,
      });
    }
    assert.throws(() =>
      wh.verify(received[0]!.body.replace('Hooked', 'Hacked'), {
        'svix-id': String(received[0]!.headers['webhook-id']),
        'svix-timestamp': String(received[0]!.headers['webhook-timestamp']),
        'svix-signature': String(received[0]!.headers['webhook-signature']),
      }),
    );

    const got = ok(await resend.webhooks.get(created.id), 'webhooks.get');
    hasFields(
      got,
      {
        object: 'string',
        id: 'string',
        created_at: 'string',
        status: 'string',
        endpoint: 'string',
        events: 'array',
        signing_secret: 'string',
      },
      'GetWebhookResponseSuccess',
    );
    assert.equal(got.endpoint, `${hooks.url}/resend`);
    const list = ok(await resend.webhooks.list(), 'webhooks.list');
    for (const w of list.data)
      hasFields(
        w,
        { id: 'string', endpoint: 'string', created_at: 'string', status: 'string', events: 'array' },
        'Webhook',
      );

    // The receiver has the requests; the outcome is recorded just after the answer.
    const events = await eventually(
      async () => {
        const page = ok(await resend.webhooks.events.list({ webhookId: created.id }), 'webhooks.events.list');
        return page.data.filter((e) => e.status === 'success').length >= 2 ? page : undefined;
      },
      15_000,
      'both deliveries recorded as successful',
    );
    for (const e of events.data)
      hasFields(e, { id: 'string', type: 'string', created_at: 'string', status: 'string' }, 'WebhookEventLog');
    const delivered = events.data.find((e) => e.type === 'email.delivered')!;
    const event = ok(
      await resend.webhooks.events.get({ webhookId: created.id, eventId: delivered.id }),
      'webhooks.events.get',
    );
    hasFields(
      event,
      {
        object: 'string',
        id: 'string',
        type: 'string',
        created_at: 'string',
        status: 'string',
        next_attempt_at: 'string|null',
        payload: 'object',
      },
      'GetWebhookEventResponseSuccess',
    );
    assert.equal((event.payload as { type: string }).type, 'email.delivered');
    const attempts = ok(
      await resend.webhooks.events.attempts.list({ webhookId: created.id, eventId: delivered.id }),
      'attempts.list',
    );
    assert.equal(attempts.data.length, 1);
    hasFields(
      attempts.data[0],
      { id: 'string', http_status_code: 'number', response: 'string', sent_at: 'string' },
      'WebhookEventAttempt',
    );

    const before = hooks.received.length;
    const replayed = ok(
      await resend.webhooks.events.replay({ webhookId: created.id, eventId: delivered.id }),
      'webhooks.events.replay',
    );
    assert.equal(replayed.object, 'webhook_event');
    await hooks.waitFor(before + 1, () => true, 20_000);
    assert.equal(hooks.received.at(-1)!.headers['webhook-id'], delivered.id, 'the replay is the same delivery');

    const rotated = ok(await resend.webhooks.rotateSigningSecret(created.id), 'webhooks.rotateSigningSecret');
    assert.notEqual(rotated.signing_secret, created.signing_secret);
    assert.match(rotated.signing_secret, /^whsec_/);
    ok(
      await resend.webhooks.update(created.id, { endpoint: `${hooks.url}/moved`, status: 'disabled' }),
      'webhooks.update',
    );
    const moved = ok(await resend.webhooks.get(created.id));
    assert.deepEqual([moved.endpoint, moved.status], [`${hooks.url}/moved`, 'disabled']);
    failed(
      await resend.webhooks.create({ endpoint: `${hooks.url}/x`, events: ['contact.created'] }),
      400,
      'validation_error',
      /Resend event type that mailsvc does not emit/,
    );
    const removed = ok(await resend.webhooks.remove(created.id), 'webhooks.remove');
    assert.deepEqual(removed, { object: 'webhook', id: created.id, deleted: true });
  });

  it('reports errors in the shape the SDK reads: name, message, statusCode', async () => {
    failed(await resend.emails.get('0190a4b2-0000-7000-8000-000000000000'), 404, 'not_found');
    failed(
      await resend.emails.send({ from: 'hello@acme.example', to: 'not-an-address', subject: 's', html: 'h' }),
      400,
      'validation_error',
      /^to:/,
    );
    failed(
      await resend.emails.send({ from: 'hello@unverified.example', to: 'a@example.org', subject: 's', html: 'h' }),
      403,
      'invalid_access',
    );
    failed(await resendClient(server, 'sk_live_nope').emails.list(), 401, 'invalid_api_key');
  });
});
