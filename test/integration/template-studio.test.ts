import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestServer } from '../helpers/server.js';
import { call, mcpClient } from '../helpers/mcp.js';
import { request } from '../helpers/http.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import type { TestDns } from '../helpers/dns-server.js';
import type { TestMx } from '../helpers/mx-server.js';
import { routeDomain, verifyDkim } from '../helpers/delivery.js';
import { MAX_TEMPLATE_BYTES } from '../../src/services/templates.js';

const MJML = `<mjml>
  <mj-body>
    <mj-section>
      <mj-column>
        <mj-text>Hello {{name}}, your order {{order}} shipped.</mj-text>
        <mj-button href="https://shop.example/orders/{{order}}">Track it</mj-button>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;

describe('the template studio: MJML, versions, previews and client checks (REST and MCP over one service)', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let key: string;
  let client: Client;
  let id: string;

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { retrySchedule: [1], pollInterval: 50, signingThreads: 1 },
      senders: ['acme.example'],
    });
    ({ server, dns, mx } = rig);
    routeDomain(dns, 'example.org', [{ name: 'mx.example.org', preference: 10, a: ['127.0.0.1'] }]);
    key = await server.key();
    client = await mcpClient(server, key);
  });
  after(async () => {
    await client?.close();
    await rig?.close();
  });

  it('creates a template from MJML through the tool; REST shows the MJML and the HTML it compiled to', async () => {
    const created = await call(client, 'templates_create', {
      name: 'Shipped',
      subject: 'Order {{order}} shipped',
      mjml: MJML,
      from: 'Acme <hello@acme.example>',
      variables: [
        { key: 'name', type: 'string', fallback_value: 'there', sample_value: 'Ada' },
        { key: 'order', type: 'string', sample_value: 'A-1' },
      ],
    });
    assert.equal(created.isError, undefined, JSON.stringify(created.content));
    id = created.structuredContent.id;
    const rest = await request(server.httpUrl, 'GET', `/v1/templates/${id}`, { key });
    assert.equal(rest.body.language, 'mjml');
    assert.equal(rest.body.mjml, MJML);
    assert.match(rest.body.html, /^<!doctype html>/i);
    assert.match(rest.body.html, /Hello \{\{name\}\}/);
    assert.match(rest.body.html, /<table/, 'MJML compiles to tables');
  });

  it('invalid MJML is a 400 naming its lines (REST) and a validation_error tool result (MCP), never a 500', async () => {
    const bad = MJML.replace('<mj-text>', '<mj-text colour="red">');
    const rest = await request(server.httpUrl, 'POST', '/v1/templates', { key, body: { name: 'bad', mjml: bad } });
    assert.equal(rest.status, 400);
    assert.match(rest.body.error.message, /^mjml: line 5: <mj-text> Attribute colour is illegal/);
    const tool = await call(client, 'templates_update', { id, mjml: MJML.replace('<mj-column>', '') });
    assert.equal(tool.structuredContent.error.code, 'validation_error');
    assert.match(tool.structuredContent.error.message, /line \d+/);
    const notMjml = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: { name: 'bad', mjml: '<html><body>hi</body></html>' },
    });
    assert.equal(notMjml.status, 400);
    assert.match(notMjml.body.error.message, /must start with <mjml>/);
    const both = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: { name: 'bad', mjml: MJML, html: '<p>x</p>' },
    });
    assert.equal(both.status, 400);
    const badName = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: { name: 'bad', html: '<p>x</p>', variables: [{ key: '1st', type: 'string' }] },
    });
    assert.equal(badName.status, 400);
    assert.equal(badName.body.error.message.startsWith('variables[0].key'), true);
  });

  it('inlines the CSS of an HTML source on request (inline_css)', async () => {
    const html =
      '<html><head><style>p { color: red; } @media (max-width: 480px) { p { color: blue; } }</style></head><body><p>Hi</p></body></html>';
    const inlined = await call(client, 'templates_create', { name: 'inline', html, inline_css: true });
    assert.match(inlined.structuredContent.html, /<p style="color: red;">Hi<\/p>/);
    assert.match(inlined.structuredContent.html, /@media \(max-width: 480px\)/, 'media queries stay in <style>');
    const asIs = await request(server.httpUrl, 'POST', '/v1/templates', { key, body: { name: 'as is', html } });
    assert.equal(asIs.body.html, html, 'nothing is inlined unless asked');
    const mjml = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: { name: 'x', mjml: MJML, inline_css: true },
    });
    assert.equal(mjml.status, 400);
    assert.match(mjml.body.error.message, /^inline_css: applies to html/);
  });

  it(`a source of ${MAX_TEMPLATE_BYTES} bytes is taken, one byte more is a 413`, async () => {
    const html = (bytes: number) => `<p>${'x'.repeat(bytes - 7)}</p>`;
    assert.equal(Buffer.byteLength(html(MAX_TEMPLATE_BYTES)), MAX_TEMPLATE_BYTES);
    const at = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: { name: 'big', html: html(MAX_TEMPLATE_BYTES) },
    });
    assert.equal(at.status, 201);
    const over = await request(server.httpUrl, 'POST', '/v1/templates', {
      key,
      body: { name: 'big', html: html(MAX_TEMPLATE_BYTES + 1) },
    });
    assert.equal(over.status, 413);
    assert.equal(over.body.error.code, 'payload_too_large');
  });

  it('previews with variables: given values, else samples; escaped in HTML; missing and unknown variables named', async () => {
    const preview = await call(client, 'templates_preview', { id, variables: { name: '<Bob>', coupon: 'X' } });
    assert.equal(preview.isError, undefined, JSON.stringify(preview.content));
    assert.equal(preview.structuredContent.subject, 'Order A-1 shipped');
    assert.match(preview.structuredContent.html, /Hello &lt;Bob&gt;, your order A-1 shipped/);
    assert.match(preview.structuredContent.text, /Hello <Bob>, your order A-1 shipped/);
    assert.deepEqual(preview.structuredContent.variables, {
      used: ['order', 'name'],
      missing: [],
      unknown: ['coupon'],
    });
    const rest = await request(server.httpUrl, 'POST', `/v1/templates/${id}/preview`, {
      key,
      body: { variables: { order: 'B-2' } },
    });
    assert.equal(rest.status, 200);
    assert.equal(rest.body.subject, 'Order B-2 shipped');
    assert.match(rest.body.html, /Hello Ada/);
  });

  it('checks name the clients that break display:flex and position:fixed, images without alt, Gmail clipping, a missing unsubscribe link', async () => {
    const html = `<html><head><style>
.row { display: flex; }
</style></head><body>
<div class="row" style="position: fixed; top: 0">{{greeting}}</div>
<img src="https://cdn.example/logo.png">
<a href="http://example.com/">site</a>
<!-- ${'p'.repeat(110 * 1024)} -->
</body></html>`;
    const created = await request(server.httpUrl, 'POST', '/v1/templates', { key, body: { name: 'risky', html } });
    const check = await call(client, 'templates_check', { id: created.body.id, type: 'marketing' });
    assert.equal(check.isError, undefined, JSON.stringify(check.content));
    const findings = check.structuredContent.findings as Array<{
      kind: string;
      message: string;
      lines: number[];
      clients: Array<{ client: string; support: string }>;
      suggestion: string;
    }>;
    const flex = findings.find((f) => f.message.startsWith('display:flex'))!;
    assert.deepEqual(flex.lines, [2]);
    assert.ok(flex.clients.some((c) => c.client === 'Outlook (Windows)' && c.support === 'not supported'));
    assert.match(flex.suggestion, /tables/);
    const position = findings.find((f) => f.message.startsWith('position'))!;
    assert.deepEqual(position.lines, [4]);
    assert.ok(position.clients.some((c) => c.client === 'Gmail (web)' && c.support === 'not supported'));
    assert.deepEqual(findings.find((f) => f.kind === 'image_alt')!.lines, [5]);
    assert.deepEqual(findings.find((f) => f.kind === 'insecure_link')!.lines, [6]);
    assert.ok(findings.some((f) => f.kind === 'gmail_clipping'));
    assert.ok(findings.some((f) => f.kind === 'unsubscribe_link'));
    assert.ok(findings.some((f) => f.kind === 'undeclared_variable' && f.message.includes('greeting')));
    assert.ok(check.structuredContent.size > 102 * 1024);
    // Transactional mail needs no unsubscribe link; the REST route answers the same service.
    const rest = await request(server.httpUrl, 'POST', `/v1/templates/${created.body.id}/check`, {
      key,
      body: { type: 'transactional' },
    });
    assert.equal(rest.status, 200);
    assert.equal(
      rest.body.findings.some((f: { kind: string }) => f.kind === 'unsubscribe_link'),
      false,
    );
    assert.equal(rest.body.findings.length, findings.length - 1);
    // MJML's own output is clean of the layout findings.
    const clean = await call(client, 'templates_check', { id });
    assert.equal(
      (clean.structuredContent.findings as Array<{ message: string }>).some((f) =>
        /^(display:flex|position)/.test(f.message),
      ),
      false,
    );
  });

  it('publishing makes versions; an edit is a draft; a version is restored; sends use the published one', async () => {
    const v1 = await call(client, 'templates_publish', { id });
    assert.equal(v1.structuredContent.published_version, 1);
    await call(client, 'templates_update', { id, subject: 'Second subject {{order}}' });
    const v2 = await call(client, 'templates_publish', { id });
    assert.equal(v2.structuredContent.published_version, 2);
    await call(client, 'templates_update', { id, subject: 'Draft subject' });
    const versions = await call(client, 'templates_versions', { id });
    assert.deepEqual(
      versions.structuredContent.versions.map((v: { version: number; published: boolean; subject: string }) => [
        v.version,
        v.published,
        v.subject,
      ]),
      [
        [2, true, 'Second subject {{order}}'],
        [1, false, 'Order {{order}} shipped'],
      ],
    );
    const old = await request(server.httpUrl, 'POST', `/v1/templates/${id}/preview`, { key, body: { version: 1 } });
    assert.equal(old.body.subject, 'Order A-1 shipped');
    assert.equal(
      (await request(server.httpUrl, 'POST', `/v1/templates/${id}/preview`, { key, body: { version: 9 } })).status,
      404,
    );
    const restored = await call(client, 'templates_restore', { id, version: 1 });
    assert.equal(restored.structuredContent.subject, 'Order {{order}} shipped');
    assert.equal(restored.structuredContent.published_version, 2, 'restoring makes a draft; sends keep version 2');
    assert.equal(restored.structuredContent.has_unpublished_versions, true);
    const rest = await request(server.httpUrl, 'GET', `/v1/templates/${id}/versions`, { key });
    assert.equal(rest.body.data.length, 2);
  });

  it('a test send arrives at the MX with the published version, signed with valid DKIM', async () => {
    const sent = await call(client, 'templates_send_test', { id, to: 'ann@example.org', variables: { order: 'C-3' } });
    assert.equal(sent.isError, undefined, JSON.stringify(sent.content));
    const [message] = await mx.waitFor(1);
    const dkim = await verifyDkim(message!.raw, dns);
    assert.ok(
      dkim.some(
        (r: { status: { result: string }; signingDomain: string }) =>
          r.status.result === 'pass' && r.signingDomain === 'acme.example',
      ),
      'DKIM passes',
    );
    const parsed = await simpleParser(message!.raw);
    assert.equal(parsed.subject, 'Second subject C-3', 'the published version, not the restored draft');
    assert.match(parsed.html || '', /Hello there, your order C-3 shipped/, 'the fallback, not the preview sample');
  });
});
