import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import MailComposer from 'nodemailer/lib/mail-composer';
import nodemailer from 'nodemailer';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestServer } from '../helpers/server.js';
import { call, mcpClient } from '../helpers/mcp.js';
import { request } from '../helpers/http.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import type { TestMx } from '../helpers/mx-server.js';

const compose = (options: ConstructorParameters<typeof MailComposer>[0]) =>
  new MailComposer({ xMailer: false, ...options }).compile().build();

describe('MCP: broadcasts (confirmation before sending), inboxes (drafts, never sends), deliverability, resources and prompts', () => {
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let key: string;
  let client: Client;
  let testClient: Client;

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { pollInterval: 20, signingThreads: 0 },
      config: { smtp: { inbound: { enabled: true, port: 0 } } },
      senders: ['acme.test'],
    });
    ({ server, mx } = rig);
    key = await server.key();
    client = await mcpClient(server, key);
    testClient = await mcpClient(server, await server.key({ test: true }));
  });
  after(async () => {
    await client?.close();
    await testClient?.close();
    await rig?.close();
  });

  it('a broadcast is drafted and previewed; sending answers the recipient count and sends nothing until confirm: true', async () => {
    const segment = (await call(client, 'segments_create', { name: 'Customers' })).structuredContent.id as string;
    await call(client, 'contacts_create', { email: 'ann@example.org', first_name: 'Ann', segment_ids: [segment] });
    await call(client, 'contacts_create', { email: 'bob@example.org', segment_ids: [segment] });
    await call(client, 'contacts_create', { email: 'gone@example.org', unsubscribed: true, segment_ids: [segment] });

    const draft = await call(testClient, 'broadcasts_create', {
      segment_id: segment,
      from: 'Acme <news@acme.test>',
      subject: 'News for {{first_name}}',
      html: '<p>Hi {{first_name}}</p><a href="{{{unsubscribe_url}}}">Unsubscribe</a>',
    });
    assert.equal(draft.isError, undefined, JSON.stringify(draft.content));
    const id = draft.structuredContent.id as string;
    assert.equal(draft.structuredContent.status, 'draft');

    const preview = await call(testClient, 'broadcasts_preview', { id, contact: { first_name: 'Zoe' } });
    assert.equal(preview.structuredContent.subject, 'News for Zoe');
    assert.match(preview.structuredContent.html, /<p>Hi Zoe<\/p>/);
    assert.equal(preview.structuredContent.recipients, 2, 'the unsubscribed contact is not counted');

    const asked = await call(testClient, 'broadcasts_send', { id });
    assert.equal(asked.isError, undefined);
    assert.deepEqual(
      [asked.structuredContent.sent, asked.structuredContent.confirmation_required, asked.structuredContent.recipients],
      [false, true, 2],
    );
    assert.match(asked.structuredContent.message, /would mail 2 recipients now/);
    const still = await request(server.httpUrl, 'GET', `/v1/broadcasts/${id}`, { key });
    assert.equal(still.body.status, 'draft', 'nothing was sent');
    const reach = await request(server.httpUrl, 'GET', `/v1/broadcasts/${id}/reach`, { key });
    assert.equal(reach.body.recipients, 2);

    const sent = await call(testClient, 'broadcasts_send', { id, confirm: true });
    assert.equal(sent.isError, undefined, JSON.stringify(sent.content));
    assert.equal(sent.structuredContent.sent, true);
    assert.equal(sent.structuredContent.recipients, 2);
    const again = await call(testClient, 'broadcasts_send', { id });
    assert.equal(again.structuredContent.error.code, 'validation_error', 'no longer a draft');
    // A sending-only key may not touch broadcasts at all.
    const sending = await server.runtime.services.credentials.createKey({
      name: 's',
      workspaceId: server.workspaceId,
      permission: 'sending_access',
    });
    const sendingClient = await mcpClient(server, sending.secret);
    try {
      assert.equal(
        (await call(sendingClient, 'broadcasts_send', { id, confirm: true })).structuredContent.error.code,
        'forbidden',
      );
    } finally {
      await sendingClient.close();
    }
  });

  it('inboxes: threads are listed, searched and read; a reply is drafted and nothing is sent', async () => {
    const inbox = await request(server.httpUrl, 'POST', '/v1/inboxes', {
      key,
      body: { email_address: 'support@acme.test', name: 'Support' },
    });
    assert.equal(inbox.status, 201, JSON.stringify(inbox.body));
    const raw = await compose({
      from: 'Ann <ann@sender.test>',
      to: 'support@acme.test',
      subject: 'Where is order 42?',
      text: 'My parcel has not arrived.',
      messageId: '<q42@sender.test>',
    });
    await nodemailer
      .createTransport({
        host: '127.0.0.1',
        port: server.inboundPort!,
        secure: false,
        tls: { rejectUnauthorized: false },
      })
      .sendMail({ envelope: { from: 'ann@sender.test', to: ['support@acme.test'] }, raw });

    const inboxes = await call(client, 'inboxes_list');
    assert.equal(inboxes.structuredContent.inboxes.length, 1);
    const listed = await call(client, 'inboxes_threads', { inbox: 'support@acme.test' });
    assert.equal(listed.structuredContent.threads.length, 1);
    const threadId = listed.structuredContent.threads[0].id as string;
    const found = await call(client, 'inboxes_threads', { inbox: 'support@acme.test', query: 'parcel' });
    assert.equal(found.structuredContent.threads[0].id, threadId);
    assert.equal(
      (await call(client, 'inboxes_threads', { inbox: 'support@acme.test', query: 'refund' })).structuredContent.threads
        .length,
      0,
    );
    const thread = await call(client, 'inboxes_read_thread', { inbox: 'support@acme.test', thread_id: threadId });
    const message = thread.structuredContent.messages[0];
    assert.match(message.text, /parcel has not arrived/);

    const draft = await call(client, 'inboxes_draft_reply', {
      inbox: 'support@acme.test',
      thread_id: threadId,
      reply_to_email_id: message.id,
      text: 'It left our warehouse today.',
    });
    assert.equal(draft.isError, undefined, JSON.stringify(draft.content));
    assert.equal(draft.structuredContent.type, 'reply');
    assert.deepEqual(draft.structuredContent.to, ['ann@sender.test']);
    const drafts = await request(server.httpUrl, 'GET', '/v1/inboxes/support@acme.test/drafts', { key });
    assert.equal(drafts.body.data.length, 1);
    const emails = await request(server.httpUrl, 'GET', '/v1/emails?to=ann@sender.test', { key });
    assert.equal(emails.body.data.length, 0, 'a draft is not sent');
    assert.equal(mx.messages.length, 0);
  });

  it("deliverability: a domain's health and the reputation guard's state", async () => {
    const health = await call(client, 'deliverability_domain_health', { domain: 'acme.test' });
    assert.equal(health.isError, undefined, JSON.stringify(health.content));
    assert.equal(health.structuredContent.status, 'verified');
    assert.ok(health.structuredContent.reputation);
    const reputation = await call(client, 'deliverability_reputation');
    assert.ok(Array.isArray(reputation.structuredContent.domains));
  });

  it('templates are resources (source and compiled HTML); the two prompts are listed and rendered', async () => {
    const created = await call(client, 'templates_create', {
      name: 'Res',
      mjml: '<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>',
    });
    const id = created.structuredContent.id as string;
    const { resources } = await client.listResources();
    assert.ok(resources.some((r) => r.uri === `mailsvc://templates/${id}/source`));
    const source = await client.readResource({ uri: `mailsvc://templates/${id}/source` });
    assert.match((source.contents[0] as { text: string }).text, /^<mjml>/);
    assert.equal(source.contents[0]!.mimeType, 'application/vnd.mjml+xml');
    const html = await client.readResource({ uri: `mailsvc://templates/${id}/html` });
    assert.match((html.contents[0] as { text: string }).text, /<!doctype html>/i);
    await assert.rejects(client.readResource({ uri: 'mailsvc://templates/nope/html' }), /not found/);

    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name).sort(), ['design_email_template', 'write_broadcast']);
    const prompt = await client.getPrompt({ name: 'write_broadcast', arguments: { topic: 'spring sale' } });
    assert.match((prompt.messages[0]!.content as { text: string }).text, /confirm: true only after I agree/);
  });
});
