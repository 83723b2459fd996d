import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import MailComposer from 'nodemailer/lib/mail-composer';
import nodemailer from 'nodemailer';
import { Resend } from 'resend';
import { simpleParser } from 'mailparser';
import { eventually, routeDomain, verifyDkim } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { startChatServer } from '../helpers/chat-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import { failed, hasFields, ok } from '../helpers/resend.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The inbox methods of the unchanged Resend SDK (threads, their emails and labels, labels,
 * drafts, the agent's settings) against a real server: mail arrives at the inbound SMTP
 * listener, replies leave through the loopback MX. Field lists are copied from the SDK's
 * declarations (node_modules/resend/dist/index.d.mts).
 */

const compose = (options: ConstructorParameters<typeof MailComposer>[0]) =>
  new MailComposer({ xMailer: false, ...options }).compile().build();

const THREAD_FIELDS = {
  id: 'string',
  subject: 'string|null',
  from: 'string|null',
  to: 'array',
  cc: 'array',
  bcc: 'array',
  labels: 'array',
  email_count: 'number',
  has_attachment: 'boolean',
  has_draft: 'boolean',
  read: 'boolean',
  received_at: 'string',
  folder: 'string',
} as const;
const SUMMARY_FIELDS = {
  object: 'string',
  id: 'string',
  subject: 'string|null',
  folder: 'string',
  labels: 'array',
  read: 'boolean',
} as const;
const MESSAGE_FIELDS = {
  id: 'string',
  direction: 'string',
  from: 'string',
  to: 'array',
  cc: 'array',
  bcc: 'array',
  reply_to: 'array',
  subject: 'string|null',
  message_id: 'string|null',
  html: 'string|null',
  text: 'string|null',
  attachments: 'array',
  read: 'boolean',
  received_at: 'string',
} as const;
const LABEL_FIELDS = { id: 'string', name: 'string', color: 'string', created_at: 'string' } as const;

describe('Resend SDK inboxes: threads, labels, replies, drafts, agent', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let resend: Resend;
  let inboxId: string;
  const inbox = () => ({ inboxId });
  const deliver = async (raw: Buffer, from = 'ann@sender.test', to = ['support@acme.test']) => {
    const info = await nodemailer
      .createTransport({
        host: '127.0.0.1',
        port: server.inboundPort!,
        secure: false,
        tls: { rejectUnauthorized: false },
      })
      .sendMail({ envelope: { from, to }, raw });
    return /received as ([0-9a-f-]{36})/.exec(info.response)?.[1] ?? assert.fail(info.response);
  };
  const threadOf = async (subject: string) => {
    const list = ok(await resend.inboxes.threads.list({ ...inbox(), limit: 100 }), 'threads.list');
    return (
      list.data.find((t) => t.subject === subject) ??
      assert.fail(`no thread ${subject} in ${JSON.stringify(list.data.map((t) => t.subject))}`)
    );
  };

  let orderThread: string;
  let orderFirst: string;
  let refundThread: string;

  before(async () => {
    rig = await startDeliveringServer({
      delivery: { pollInterval: 20, signingThreads: 0 },
      config: { smtp: { inbound: { enabled: true, port: 0 } }, dashboard: { password: 'inbox-dashboard-pw' } },
      senders: ['acme.test'],
    });
    ({ server, dns, mx } = rig);
    routeDomain(dns, 'sender.test', [{ name: 'mx.sender.test', preference: 10, a: ['127.0.0.1'] }]);
    routeDomain(dns, 'other.test', [{ name: 'mx.other.test', preference: 10, a: ['127.0.0.1'] }]);
    routeDomain(dns, 'partner.test', [{ name: 'mx.partner.test', preference: 10, a: ['127.0.0.1'] }]);
    resend = new Resend(await server.key(), { baseUrl: server.httpUrl });
    inboxId = ok(
      await resend.inboxes.create({ emailAddress: 'support@acme.test', name: 'Support', fromName: 'Acme Support' }),
      'inboxes.create',
    ).id;

    // A conversation: a question with an attachment, the customer's follow-up naming it in
    // In-Reply-To, and a message without threading headers whose subject and sender match.
    orderFirst = await deliver(
      await compose({
        from: 'Ann Sender <ann@sender.test>',
        to: 'support@acme.test',
        subject: 'Order 42 is broken',
        text: 'My order arrived broken.',
        messageId: '<order-42@sender.test>',
        attachments: [{ filename: 'photo.txt', content: 'a broken thing', contentType: 'text/plain' }],
      }),
    );
    await deliver(
      await compose({
        from: 'ann@sender.test',
        to: 'support@acme.test',
        subject: 'Re: Order 42 is broken',
        text: 'Any news?',
        messageId: '<order-42-2@sender.test>',
        inReplyTo: '<order-42@sender.test>',
        references: ['<order-42@sender.test>'],
      }),
    );
    await deliver(
      await compose({
        from: 'ann@sender.test',
        to: 'support@acme.test',
        subject: 'RE: order 42 is  broken',
        text: 'Hello again',
        messageId: '<order-42-3@sender.test>',
      }),
    );
    // Another conversation, and a same-subject message from someone else: a thread of its own.
    await deliver(
      await compose({
        from: 'Bob <bob@other.test>',
        to: 'support@acme.test',
        cc: 'boss@other.test',
        subject: 'Invoice question',
        text: 'I would like a refund for the invoice.',
        messageId: '<inv@other.test>',
      }),
      'bob@other.test',
    );
    await deliver(
      await compose({
        from: 'carl@partner.test',
        to: 'support@acme.test',
        subject: 'Re: Order 42 is broken',
        text: 'Not Ann.',
        messageId: '<carl@partner.test>',
      }),
      'carl@partner.test',
    );
  });
  after(async () => {
    await rig?.close();
  });

  it('threads.list: conversations by Message-ID, In-Reply-To and References; by subject and sender only without them', async () => {
    const list = ok(await resend.inboxes.threads.list(inbox()), 'threads.list');
    assert.equal(list.object, 'list');
    assert.equal(list.has_more, false);
    assert.equal(list.data.length, 3, JSON.stringify(list.data.map((t) => [t.subject, t.email_count])));
    for (const t of list.data) hasFields(t, THREAD_FIELDS, 'InboxThread');
    const order = list.data.find((t) => t.email_count === 3) ?? assert.fail('no thread of three');
    orderThread = order.id;
    assert.equal(order.subject, 'Order 42 is broken');
    assert.equal(order.folder, 'inbox');
    assert.equal(order.read, false);
    assert.equal(order.has_attachment, true);
    assert.equal(order.has_draft, false);
    assert.deepEqual(order.to, ['support@acme.test']);
    const carl = list.data.find((t) => t.from === 'carl@partner.test') ?? assert.fail('carl has his own thread');
    assert.equal(carl.email_count, 1);
    const bob = list.data.find((t) => t.subject === 'Invoice question')!;
    refundThread = bob.id;
    assert.deepEqual(bob.cc, ['boss@other.test']);
    assert.equal(bob.has_attachment, false);
    // Latest activity first.
    assert.deepEqual(
      list.data.map((t) => t.id),
      [...list.data]
        .sort((a, b) => b.received_at.localeCompare(a.received_at) || b.id.localeCompare(a.id))
        .map((t) => t.id),
    );
    const got = ok(await resend.inboxes.get(inboxId), 'inboxes.get');
    assert.equal(got.unread, 3);
    assert.equal(got.drafts, 0);
    // The same inbox by its address.
    const byAddress = ok(
      await resend.inboxes.threads.list({ emailAddress: 'support@acme.test' }),
      'threads.list by address',
    );
    assert.equal(byAddress.data.length, 3);
  });

  it('threads.list pages with limit, after and before', async () => {
    const first = ok(await resend.inboxes.threads.list({ ...inbox(), limit: 2 }), 'page 1');
    assert.equal(first.data.length, 2);
    assert.equal(first.has_more, true);
    const second = ok(await resend.inboxes.threads.list({ ...inbox(), limit: 2, after: first.data[1]!.id }), 'page 2');
    assert.equal(second.data.length, 1);
    assert.equal(second.has_more, false);
    const back = ok(await resend.inboxes.threads.list({ ...inbox(), limit: 2, before: second.data[0]!.id }), 'back');
    assert.deepEqual(
      back.data.map((t) => t.id),
      first.data.map((t) => t.id),
    );
  });

  it('threads.emails.list and get: every message of the thread, oldest first, with the declared fields', async () => {
    const emails = ok(
      await resend.inboxes.threads.emails.list({ ...inbox(), threadId: orderThread }),
      'threads.emails.list',
    );
    assert.equal(emails.object, 'list');
    assert.equal(emails.data.length, 3);
    for (const m of emails.data) hasFields(m, MESSAGE_FIELDS, 'InboxMessage');
    assert.deepEqual(
      emails.data.map((m) => m.message_id),
      ['<order-42@sender.test>', '<order-42-2@sender.test>', '<order-42-3@sender.test>'],
    );
    const first = emails.data[0]!;
    assert.equal(first.id, orderFirst, 'a received message goes by its received email id');
    assert.equal(first.direction, 'inbound');
    assert.equal(first.from, 'Ann Sender <ann@sender.test>');
    assert.equal(first.text, 'My order arrived broken.');
    assert.equal(first.read, false);
    assert.equal(first.attachments.length, 1);
    hasFields(
      first.attachments[0],
      { id: 'string', filename: 'string|null', size: 'number|null' },
      'InboxMessageAttachment',
    );
    assert.equal(first.attachments[0]!.filename, 'photo.txt');
    const paged = ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: orderThread, limit: 2 }), 'page');
    assert.equal(paged.has_more, true);
    const rest = ok(
      await resend.inboxes.threads.emails.list({
        ...inbox(),
        threadId: orderThread,
        limit: 2,
        after: paged.data[1]!.id,
      }),
      'rest',
    );
    assert.deepEqual(
      rest.data.map((m) => m.message_id),
      ['<order-42-3@sender.test>'],
    );

    const one = ok(
      await resend.inboxes.threads.emails.get({ ...inbox(), threadId: orderThread, emailId: orderFirst }),
      'threads.emails.get',
    );
    hasFields(one, MESSAGE_FIELDS, 'InboxMessage');
    assert.equal(one.subject, 'Order 42 is broken');
    failed(
      await resend.inboxes.threads.emails.get({ ...inbox(), threadId: refundThread, emailId: orderFirst }),
      404,
      'not_found',
    );
  });

  it('threads.get and threads.update: read state and folders, and the list filters on them', async () => {
    const got = ok(await resend.inboxes.threads.get({ ...inbox(), threadId: orderThread }), 'threads.get');
    hasFields(got, SUMMARY_FIELDS, 'InboxThreadSummary');
    assert.equal(got.object, 'inbox_thread');
    assert.equal(got.read, false);

    const read = ok(
      await resend.inboxes.threads.update({ ...inbox(), threadId: orderThread, read: true }),
      'threads.update read',
    );
    hasFields(read, SUMMARY_FIELDS, 'InboxThreadSummary');
    assert.equal(read.read, true);
    const messages = ok(
      await resend.inboxes.threads.emails.list({ ...inbox(), threadId: orderThread }),
      'emails after read',
    );
    assert.ok(messages.data.every((m) => m.read));

    const unread = ok(await resend.inboxes.threads.list({ ...inbox(), read: false }), 'unread threads');
    assert.ok(!unread.data.some((t) => t.id === orderThread));
    assert.equal(unread.data.length, 2);
    const readOnly = ok(await resend.inboxes.threads.list({ ...inbox(), read: true }), 'read threads');
    assert.deepEqual(
      readOnly.data.map((t) => t.id),
      [orderThread],
    );

    const archived = ok(
      await resend.inboxes.threads.update({ ...inbox(), threadId: orderThread, folder: 'archive' }),
      'archive',
    );
    assert.equal(archived.folder, 'archive');
    assert.deepEqual(
      ok(await resend.inboxes.threads.list({ ...inbox(), folders: ['archive'] }), 'archive list').data.map((t) => t.id),
      [orderThread],
    );
    assert.equal(
      ok(await resend.inboxes.threads.list({ ...inbox(), folders: ['inbox', 'spam'] }), 'inbox list').data.length,
      2,
    );

    // A new message in an archived conversation brings it back to the inbox, unread.
    await deliver(
      await compose({
        from: 'ann@sender.test',
        to: 'support@acme.test',
        subject: 'Re: Order 42 is broken',
        text: 'Hello? refund maybe',
        messageId: '<order-42-4@sender.test>',
        references: ['<order-42@sender.test>', '<order-42-3@sender.test>'],
      }),
    );
    const back = ok(await resend.inboxes.threads.get({ ...inbox(), threadId: orderThread }), 'back in inbox');
    assert.equal(back.folder, 'inbox');
    assert.equal(back.read, false);
    assert.equal(
      ok(await resend.inboxes.threads.list(inbox()), 'list').data[0]!.id,
      orderThread,
      'latest activity first',
    );

    const unreadAgain = ok(
      await resend.inboxes.threads.update({ ...inbox(), threadId: refundThread, read: true }),
      'read',
    );
    assert.equal(unreadAgain.read, true);
    assert.equal(
      ok(await resend.inboxes.threads.update({ ...inbox(), threadId: refundThread, read: false }), 'unread').read,
      false,
    );

    // `sent` is where threads we start live; a thread cannot be moved there.
    const bad = await request(server.httpUrl, 'PATCH', `/inboxes/${inboxId}/threads/${orderThread}`, {
      key: await server.key(),
      body: { folder: 'sent' },
    });
    assert.equal(bad.status, 400, show(bad));
    failed(
      await resend.inboxes.threads.get({ ...inbox(), threadId: '00000000-0000-7000-8000-000000000000' }),
      404,
      'not_found',
    );
    failed(await resend.inboxes.threads.get({ ...inbox(), threadId: 'not-an-id' }), 404, 'not_found');
    failed(await resend.inboxes.threads.list({ inboxId: '00000000-0000-7000-8000-000000000000' }), 404, 'not_found');
    failed(
      await resend.inboxes.threads.list({ ...inbox(), folders: ['nowhere' as 'inbox'] }),
      400,
      'validation_error',
      /folders/,
    );
  });

  it('threads.search: words through the full-text index, senders, recipients, attachments, dates', async () => {
    const refund = ok(await resend.inboxes.threads.search({ ...inbox(), query: 'refund' }), 'search refund');
    assert.deepEqual(refund.data.map((t) => t.id).sort(), [orderThread, refundThread].sort());
    for (const t of refund.data)
      hasFields(t, { ...THREAD_FIELDS, matched_email_id: 'string|null' }, 'InboxThreadSearchResult');
    const order = refund.data.find((t) => t.id === orderThread)!;
    const fourth = ok(
      await resend.inboxes.threads.emails.list({ ...inbox(), threadId: orderThread }),
      'emails',
    ).data.at(-1)!;
    assert.equal(order.matched_email_id, fourth.id, 'the message that matched');

    // All words must match, in one message; case and accents do not matter.
    assert.deepEqual(
      ok(await resend.inboxes.threads.search({ ...inbox(), query: 'REFUND invoice' }), 'two words').data.map(
        (t) => t.id,
      ),
      [refundThread],
    );
    assert.deepEqual(
      ok(await resend.inboxes.threads.search({ ...inbox(), query: 'refund nothing-like-this' }), 'no match').data,
      [],
    );
    // Participants and subjects are indexed too; quotes in a query are words, not syntax.
    assert.deepEqual(
      ok(await resend.inboxes.threads.search({ ...inbox(), query: 'boss@other.test' }), 'participant').data.map(
        (t) => t.id,
      ),
      [refundThread],
    );
    assert.ok(
      ok(await resend.inboxes.threads.search({ ...inbox(), query: '"broken' }), 'quote').data.some(
        (t) => t.id === orderThread,
      ),
    );

    assert.deepEqual(
      ok(await resend.inboxes.threads.search({ ...inbox(), from: ['BOB@other.test'] }), 'from').data.map((t) => t.id),
      [refundThread],
    );
    assert.deepEqual(
      ok(await resend.inboxes.threads.search({ ...inbox(), cc: ['boss@other.test'] }), 'cc').data.map((t) => t.id),
      [refundThread],
    );
    assert.equal(
      ok(await resend.inboxes.threads.search({ ...inbox(), to: ['support@acme.test'] }), 'to').data.length,
      3,
    );
    assert.deepEqual(
      ok(await resend.inboxes.threads.search({ ...inbox(), hasAttachment: true }), 'attachment').data.map((t) => t.id),
      [orderThread],
    );
    const future = new Date(Date.now() + 3600_000).toISOString();
    assert.deepEqual(ok(await resend.inboxes.threads.search({ ...inbox(), startDate: future }), 'future').data, []);
    assert.equal(ok(await resend.inboxes.threads.search({ ...inbox(), endDate: future }), 'past').data.length, 3);
    assert.deepEqual(
      ok(await resend.inboxes.threads.search({ ...inbox(), query: 'refund', folders: ['archive'] }), 'refund archived')
        .data,
      [],
    );
    failed(
      await resend.inboxes.threads.search({ ...inbox(), startDate: 'yesterday' }),
      400,
      'validation_error',
      /start_date/,
    );
    // An HTML-only message is searched by the text of its HTML.
    const htmlOnly = await deliver(
      await compose({
        from: 'bob@other.test',
        to: 'support@acme.test',
        subject: 'Re: Invoice question',
        html: '<p>The shipment is <b>delayed</b> in customs.</p>',
        messageId: '<inv-2@other.test>',
        inReplyTo: '<inv@other.test>',
      }),
      'bob@other.test',
    );
    const delayed = ok(await resend.inboxes.threads.search({ ...inbox(), query: 'delayed customs' }), 'html only').data;
    assert.deepEqual(
      delayed.map((t) => [t.id, t.matched_email_id]),
      [[refundThread, htmlOnly]],
    );
    const asReceived = ok(
      await resend.inboxes.threads.emails.get({ ...inbox(), threadId: refundThread, emailId: htmlOnly }),
      'as received',
    );
    assert.ok(!asReceived.text, 'no text part is made up');
    assert.match(asReceived.html ?? '', /<p>The shipment is <b>delayed<\/b> in customs\.<\/p>/);
    // Query syntax of either engine is never interpreted: operators and lone punctuation are words or nothing.
    for (const query of ['"', '*', 'AND', 'NEAR(refund', '-refund', '^x', "'", 'refund OR nothing', ':', '\\']) {
      const r = await resend.inboxes.threads.search({ ...inbox(), query });
      assert.equal(r.error, null, `${query}: ${JSON.stringify(r.error)}`);
    }
    assert.equal(
      ok(await resend.inboxes.threads.search({ ...inbox(), query: `refund ${'x'.repeat(493)}` }), '500 characters').data
        .length,
      0,
    );
    failed(
      await resend.inboxes.threads.search({ ...inbox(), query: 'x'.repeat(501) }),
      400,
      'validation_error',
      /query/,
    );
    failed(await resend.inboxes.threads.search({ ...inbox(), query: 'nul\u0000' }), 400, 'validation_error', /query/);
    failed(
      await resend.inboxes.threads.search({ ...inbox(), from: ['a\u0000@b.test'] }),
      400,
      'validation_error',
      /from/,
    );
  });

  it('labels: create, list, update, remove; threads.labels add, set, remove; threads filtered by label', async () => {
    const urgent = ok(
      await resend.inboxes.labels.create({ ...inbox(), name: 'Urgent', color: '#e93d82' }),
      'labels.create',
    );
    assert.equal(urgent.object, 'inbox_label');
    const billing = ok(
      await resend.inboxes.labels.create({ ...inbox(), name: 'Billing' }),
      'labels.create without colour',
    );
    const labels = ok(await resend.inboxes.labels.list(inbox()), 'labels.list');
    assert.equal(labels.object, 'list');
    for (const l of labels.data) hasFields(l, LABEL_FIELDS, 'InboxLabel');
    assert.deepEqual(
      labels.data.map((l) => l.name),
      ['Billing', 'Urgent'],
    );
    assert.equal(labels.data.find((l) => l.id === urgent.id)!.color, '#E93D82');
    assert.match(labels.data.find((l) => l.id === billing.id)!.color, /^#[0-9A-F]{6}$/);
    failed(
      await resend.inboxes.labels.create({ ...inbox(), name: 'Urgent' }),
      409,
      'validation_error',
      /already has a label/,
    );
    failed(
      await resend.inboxes.labels.create({ ...inbox(), name: 'Bad', color: 'red' }),
      400,
      'validation_error',
      /color/,
    );
    failed(await resend.inboxes.labels.create({ ...inbox(), name: 'x'.repeat(51) }), 400, 'validation_error', /name/);
    ok(await resend.inboxes.labels.create({ ...inbox(), name: 'x'.repeat(50), color: '#000000' }), '50 characters');

    const updated = ok(
      await resend.inboxes.labels.update({ ...inbox(), labelId: billing.id, name: 'Invoices', color: '#30A46C' }),
      'labels.update',
    );
    assert.equal(updated.id, billing.id);
    assert.equal(updated.object, 'inbox_label');

    const added = ok(
      await resend.inboxes.threads.labels.add({ ...inbox(), threadId: refundThread, labels: [billing.id] }),
      'threads.labels.add',
    );
    assert.equal(added.object, 'list');
    for (const l of added.data) hasFields(l, { id: 'string', name: 'string', color: 'string' }, 'InboxThreadLabel');
    assert.deepEqual(
      added.data.map((l) => [l.name, l.color]),
      [['Invoices', '#30A46C']],
    );
    const both = ok(
      await resend.inboxes.threads.labels.add({ ...inbox(), threadId: refundThread, labels: [urgent.id, billing.id] }),
      'add again',
    );
    assert.deepEqual(
      both.data.map((l) => l.name),
      ['Invoices', 'Urgent'],
    );
    const set = ok(
      await resend.inboxes.threads.labels.set({ ...inbox(), threadId: orderThread, labels: [urgent.id] }),
      'threads.labels.set',
    );
    assert.deepEqual(
      set.data.map((l) => l.name),
      ['Urgent'],
    );

    const byLabel = ok(await resend.inboxes.threads.list({ ...inbox(), labels: [urgent.id] }), 'by label');
    assert.deepEqual(byLabel.data.map((t) => t.id).sort(), [orderThread, refundThread].sort());
    assert.deepEqual(
      ok(await resend.inboxes.threads.list({ ...inbox(), labels: ['Invoices'] }), 'by label name').data.map(
        (t) => t.id,
      ),
      [refundThread],
    );
    assert.deepEqual(
      ok(await resend.inboxes.threads.get({ ...inbox(), threadId: refundThread }), 'get').labels.map((l) => l.name),
      ['Invoices', 'Urgent'],
    );

    const removed = ok(
      await resend.inboxes.threads.labels.remove({ ...inbox(), threadId: refundThread, labelId: urgent.id }),
      'threads.labels.remove',
    );
    assert.deepEqual(
      removed.data.map((l) => l.name),
      ['Invoices'],
    );
    assert.deepEqual(
      ok(await resend.inboxes.threads.labels.set({ ...inbox(), threadId: orderThread, labels: [] }), 'clear').data,
      [],
    );

    // Between 1 and 10 labels; labels of this inbox only.
    const eleven = Array.from({ length: 11 }, () => urgent.id);
    failed(
      await resend.inboxes.threads.labels.add({ ...inbox(), threadId: refundThread, labels: eleven }),
      400,
      'validation_error',
      /labels/,
    );
    ok(
      await resend.inboxes.threads.labels.add({ ...inbox(), threadId: refundThread, labels: eleven.slice(0, 10) }),
      'ten',
    );
    failed(
      await resend.inboxes.threads.labels.add({ ...inbox(), threadId: refundThread, labels: [] }),
      400,
      'validation_error',
      /labels/,
    );
    failed(
      await resend.inboxes.threads.labels.add({
        ...inbox(),
        threadId: refundThread,
        labels: ['00000000-0000-7000-8000-000000000000'],
      }),
      404,
      'not_found',
    );

    // At most 100 labels in an inbox (created through the service: the API's rate limit is 100 a second).
    const have = ok(await resend.inboxes.labels.list(inbox()), 'count').data.length;
    for (let i = have; i < 100; i++)
      await server.runtime.services.inboxThreads.createLabel(server.workspaceId, inboxId, { name: `bulk ${i}` });
    assert.equal(ok(await resend.inboxes.labels.list(inbox()), 'hundred').data.length, 100);
    failed(
      await resend.inboxes.labels.create({ ...inbox(), name: 'one too many' }),
      409,
      'validation_error',
      /at most 100 labels/,
    );
    for (const l of ok(await resend.inboxes.labels.list(inbox()), 'bulk').data.filter((x) =>
      x.name.startsWith('bulk '),
    )) {
      await server.runtime.services.inboxThreads.removeLabel(server.workspaceId, inboxId, l.id);
    }

    const gone = ok(await resend.inboxes.labels.remove({ ...inbox(), labelId: billing.id }), 'labels.remove');
    assert.deepEqual(gone, { object: 'inbox_label', id: billing.id, deleted: true });
    assert.deepEqual(
      ok(await resend.inboxes.threads.get({ ...inbox(), threadId: refundThread }), 'get').labels.map((l) => l.name),
      ['Urgent'],
    );
    failed(await resend.inboxes.labels.update({ ...inbox(), labelId: billing.id, name: 'again' }), 404, 'not_found');
  });
  it('threads.remove: the thread leaves the inbox; the received email stays in the receiving log', async () => {
    const carl = await threadOf('Re: Order 42 is broken');
    const emails = ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: carl.id }), 'emails');
    const removed = ok(await resend.inboxes.threads.remove({ ...inbox(), threadId: carl.id }), 'threads.remove');
    assert.deepEqual(removed, { object: 'inbox_thread', id: carl.id, deleted: true });
    failed(await resend.inboxes.threads.get({ ...inbox(), threadId: carl.id }), 404, 'not_found');
    failed(await resend.inboxes.threads.remove({ ...inbox(), threadId: carl.id }), 404, 'not_found');
    assert.equal(ok(await resend.inboxes.threads.list(inbox()), 'list').data.length, 2);
    ok(await resend.emails.receiving.get(emails.data[0]!.id), 'still received');
    // The index forgets it too.
    assert.deepEqual(ok(await resend.inboxes.threads.search({ ...inbox(), query: 'Not Ann' }), 'search').data, []);
  });
  it('threads.emails.reply: from the inbox, quoted, with In-Reply-To and References, through the pipeline (DKIM), filed in the thread', async () => {
    const replied = ok(
      await resend.inboxes.threads.emails.reply({
        ...inbox(),
        threadId: orderThread,
        emailId: orderFirst,
        text: 'We are on it.',
        html: '<p>We are on it.</p>',
      }),
      'threads.emails.reply',
    );
    hasFields(replied, { id: 'string' }, 'ReplyInboxThreadEmailResponseSuccess');
    const [delivered] = await eventually(
      async () => {
        const m = mx.messages.filter((x) => x.to.includes('ann@sender.test'));
        return m.length > 0 && m;
      },
      120_000,
      'the reply at the MX',
    );
    const parsed = await simpleParser(delivered!.raw);
    assert.deepEqual(
      parsed.from?.value.map((a) => [a.name, a.address]),
      [['Acme Support', 'support@acme.test']],
    );
    assert.equal(parsed.subject, 'Re: Order 42 is broken');
    assert.equal(parsed.inReplyTo, '<order-42@sender.test>');
    assert.deepEqual([parsed.references].flat(), ['<order-42@sender.test>']);
    assert.match(
      parsed.text ?? '',
      /^We are on it\.\n\nOn .*, Ann Sender <ann@sender\.test> wrote:\n> My order arrived broken\.$/m,
    );
    assert.match(String(parsed.html), /<blockquote[^>]*>.*My order arrived broken\./s);
    const dkim = await verifyDkim(delivered!.raw, dns);
    assert.equal(dkim[0]?.status.result, 'pass', 'signed like any email');
    // An email like any other: in the email log, with its events.
    const email = ok(await resend.emails.get(replied.id), 'emails.get');
    assert.equal(email.subject, 'Re: Order 42 is broken');
    await eventually(
      async () => (await resend.emails.get(replied.id)).data?.last_event === 'delivered',
      120_000,
      'delivered',
    );

    const emails = ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: orderThread }), 'thread').data;
    const sent = emails.at(-1)!;
    hasFields(sent, MESSAGE_FIELDS, 'InboxMessage');
    assert.equal(sent.id, replied.id);
    assert.equal(sent.direction, 'outbound');
    assert.equal(sent.read, true);
    assert.deepEqual(sent.to, ['ann@sender.test']);
    assert.equal(sent.message_id, parsed.messageId);

    // The customer answers the reply: In-Reply-To names our Message-ID, and it joins the thread.
    await deliver(
      await compose({
        from: 'ann@sender.test',
        to: 'support@acme.test',
        subject: 'Re: Re: Order 42 is broken',
        text: 'Thanks!',
        messageId: '<order-42-5@sender.test>',
        inReplyTo: parsed.messageId,
      }),
    );
    const thread = ok(await resend.inboxes.threads.get({ ...inbox(), threadId: orderThread }), 'thread');
    assert.equal(
      ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: orderThread }), 'thread')
        .data.at(-1)!
        .text?.trim(),
      'Thanks!',
    );
    assert.equal(thread.read, false);

    // Reply all: the other recipients of the message in cc, never the inbox itself.
    const bobFirst = ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: refundThread }), 'bob')
      .data[0]!;
    const all = ok(
      await resend.inboxes.threads.emails.reply({
        ...inbox(),
        threadId: refundThread,
        emailId: bobFirst.id,
        text: 'Refund sent.',
        replyAll: true,
        subject: 'Your refund',
      }),
      'reply all',
    );
    const [toBob] = await eventually(
      async () => {
        const m = mx.messages.filter((x) => x.to.includes('bob@other.test'));
        return m.length > 0 && m;
      },
      120_000,
      'the reply to bob',
    );
    const bobParsed = await simpleParser(toBob!.raw);
    assert.equal(bobParsed.subject, 'Your refund');
    assert.equal((bobParsed.cc as { text: string } | undefined)?.text, 'boss@other.test');
    assert.ok(toBob!.to.includes('boss@other.test') || mx.messages.some((x) => x.to.includes('boss@other.test')));
    assert.equal(ok(await resend.inboxes.threads.get({ ...inbox(), threadId: refundThread }), 'get').id, refundThread);
    assert.equal(
      ok(await resend.inboxes.threads.emails.get({ ...inbox(), threadId: refundThread, emailId: all.id }), 'sent one')
        .direction,
      'outbound',
    );

    // Idempotent with an Idempotency-Key: the same answer, one message.
    const again1 = ok(
      await resend.inboxes.threads.emails.reply(
        { ...inbox(), threadId: refundThread, emailId: bobFirst.id, text: 'once' },
        { idempotencyKey: 'reply-once' },
      ),
      'first',
    );
    const again2 = ok(
      await resend.inboxes.threads.emails.reply(
        { ...inbox(), threadId: refundThread, emailId: bobFirst.id, text: 'once' },
        { idempotencyKey: 'reply-once' },
      ),
      'replayed',
    );
    assert.equal(again2.id, again1.id);
    assert.equal(
      ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: refundThread }), 'thread').data.filter((m) =>
        m.text?.startsWith('once'),
      ).length,
      1,
    );

    failed(
      await resend.inboxes.threads.emails.reply({
        ...inbox(),
        threadId: refundThread,
        emailId: bobFirst.id,
        text: 'x',
        headers: { 'in-reply-to': '<x@y>' },
      }),
      400,
      'validation_error',
      /In-Reply-To/,
    );
    failed(
      await resend.inboxes.threads.emails.reply({ ...inbox(), threadId: refundThread, emailId: bobFirst.id } as never),
      400,
      'validation_error',
      /text/,
    );
    failed(
      await resend.inboxes.threads.emails.reply({ ...inbox(), threadId: orderThread, emailId: bobFirst.id, text: 'x' }),
      404,
      'not_found',
    );
  });

  it('threads.emails.forward: the original with its attachments and a note, to someone new; filed in the thread', async () => {
    const forwarded = ok(
      await resend.inboxes.threads.emails.forward({
        ...inbox(),
        threadId: orderThread,
        emailId: orderFirst,
        to: 'dana@partner.test',
        text: 'Can you look at this?',
      }),
      'threads.emails.forward',
    );
    hasFields(forwarded, { id: 'string' }, 'ForwardInboxThreadEmailResponseSuccess');
    const [delivered] = await eventually(
      async () => {
        const m = mx.messages.filter((x) => x.to.includes('dana@partner.test'));
        return m.length > 0 && m;
      },
      120_000,
      'the forward at the MX',
    );
    const parsed = await simpleParser(delivered!.raw);
    assert.equal(parsed.subject, 'Fwd: Order 42 is broken');
    assert.equal(parsed.inReplyTo, undefined);
    assert.deepEqual([parsed.references].flat(), ['<order-42@sender.test>']);
    assert.match(
      parsed.text ?? '',
      /^Can you look at this\?\n\n---------- Forwarded message ---------\nFrom: Ann Sender <ann@sender\.test>\n/,
    );
    assert.match(parsed.text ?? '', /My order arrived broken\./);
    assert.equal(parsed.attachments.length, 1);
    assert.equal(parsed.attachments[0]!.filename, 'photo.txt');
    assert.equal(parsed.attachments[0]!.content.toString(), 'a broken thing');
    const sent = ok(
      await resend.inboxes.threads.emails.get({ ...inbox(), threadId: orderThread, emailId: forwarded.id }),
      'in the thread',
    );
    assert.deepEqual(sent.to, ['dana@partner.test']);
    assert.equal(sent.attachments.length, 1);
    // Suppressions apply as to any email: the forward is accepted and its recipient suppressed.
    ok(await resend.suppressions.add({ email: 'blocked@partner.test' }), 'suppressions.add');
    const toBlocked = ok(
      await resend.inboxes.threads.emails.forward({
        ...inbox(),
        threadId: orderThread,
        emailId: orderFirst,
        to: 'blocked@partner.test',
      }),
      'forward to a suppressed address',
    );
    await eventually(
      async () => (await resend.emails.get(toBlocked.id)).data?.last_event === 'suppressed',
      120_000,
      'suppressed',
    );
    assert.ok(!mx.messages.some((m) => m.to.includes('blocked@partner.test')));
    failed(
      await resend.inboxes.threads.emails.forward({ ...inbox(), threadId: orderThread, emailId: orderFirst, to: [] }),
      400,
      'validation_error',
      /to/,
    );
    failed(
      await resend.inboxes.threads.emails.forward({
        ...inbox(),
        threadId: orderThread,
        emailId: orderFirst,
        to: 'not an address',
      }),
      400,
      'validation_error',
      /to/,
    );
  });
  it('drafts: standalone and reply drafts created, listed, read, edited, sent once through the pipeline, removed', async () => {
    const DRAFT_FIELDS = {
      object: 'string',
      id: 'string',
      type: 'string',
      to: 'array|null',
      cc: 'array',
      bcc: 'array',
      subject: 'string|null',
      html: 'string|null',
      text: 'string|null',
      thread_id: 'string|null',
      reply_to_email_id: 'string|null',
      email_id: 'string|null',
      created_at: 'string',
      updated_at: 'string',
      attachments: 'array',
    } as const;
    const LIST_FIELDS = {
      id: 'string',
      type: 'string',
      to: 'array|null',
      cc: 'array',
      bcc: 'array',
      subject: 'string|null',
      snippet: 'string|null',
      thread_id: 'string|null',
      reply_to_email_id: 'string|null',
      updated_at: 'string',
      attachments: 'array',
    } as const;

    const standalone = ok(
      await resend.inboxes.drafts.create({ ...inbox(), subject: 'Quarterly update' }),
      'drafts.create',
    );
    assert.equal(standalone.object, 'inbox_draft');
    const got = ok(await resend.inboxes.drafts.get({ ...inbox(), draftId: standalone.id }), 'drafts.get');
    hasFields(got, DRAFT_FIELDS, 'InboxDraft');
    assert.equal(got.type, 'standalone');
    assert.equal(got.to, null);
    assert.equal(got.email_id, null);

    const edited = ok(
      await resend.inboxes.drafts.update({
        ...inbox(),
        draftId: standalone.id,
        to: ['Erin <erin@partner.test>'],
        text: 'Numbers attached.',
        attachments: [{ filename: 'q3.csv', content: Buffer.from('a,b\n1,2\n'), contentType: 'text/csv' }],
      }),
      'drafts.update',
    );
    assert.equal(edited.object, 'inbox_draft');
    const withFile = ok(await resend.inboxes.drafts.get({ ...inbox(), draftId: standalone.id }), 'get');
    assert.deepEqual(withFile.to, ['Erin <erin@partner.test>']);
    assert.equal(withFile.attachments.length, 1);
    hasFields(
      withFile.attachments[0],
      { id: 'string', filename: 'string', content_type: 'string', size: 'number' },
      'InboxDraftAttachment',
    );
    assert.equal(withFile.attachments[0]!.size, 8);

    // A reply draft: addressed and titled as an answer.
    const bobFirst = ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: refundThread }), 'bob')
      .data[0]!;
    const reply = ok(
      await resend.inboxes.drafts.create({
        ...inbox(),
        threadId: refundThread,
        replyToEmailId: bobFirst.id,
        text: 'Draft answer',
      }),
      'reply draft',
    );
    const replyDraft = ok(await resend.inboxes.drafts.get({ ...inbox(), draftId: reply.id }), 'get reply');
    assert.equal(replyDraft.type, 'reply');
    assert.equal(replyDraft.thread_id, refundThread);
    assert.equal(replyDraft.reply_to_email_id, bobFirst.id);
    assert.deepEqual(replyDraft.to, ['bob@other.test']);
    assert.equal(replyDraft.subject, 'Re: Invoice question');
    assert.equal(
      ok(await resend.inboxes.threads.get({ ...inbox(), threadId: refundThread }), 'thread').id,
      refundThread,
    );
    assert.equal(
      ok(await resend.inboxes.threads.list({ ...inbox(), limit: 100 }), 'list').data.find((t) => t.id === refundThread)!
        .has_draft,
      true,
    );
    assert.equal(ok(await resend.inboxes.get(inboxId), 'inbox').drafts, 2);

    const drafts = ok(await resend.inboxes.drafts.list(inbox()), 'drafts.list');
    assert.equal(drafts.object, 'list');
    assert.equal(drafts.data.length, 2);
    for (const d of drafts.data) hasFields(d, LIST_FIELDS, 'InboxDraftListItem');
    assert.deepEqual(
      drafts.data.map((d) => d.id),
      [reply.id, standalone.id],
      'last edited first',
    );
    assert.equal(drafts.data[1]!.snippet, 'Numbers attached.');
    const page = ok(await resend.inboxes.drafts.list({ ...inbox(), limit: 1 }), 'page');
    assert.equal(page.has_more, true);
    assert.deepEqual(
      ok(await resend.inboxes.drafts.list({ ...inbox(), limit: 1, after: page.data[0]!.id }), 'page 2').data.map(
        (d) => d.id,
      ),
      [standalone.id],
    );

    // Sending: once, from the inbox, through the pipeline.
    const sent = ok(
      await resend.inboxes.drafts.send({ ...inbox(), draftId: standalone.id, headers: { 'X-Campaign': 'q3' } }),
      'drafts.send',
    );
    hasFields(sent, { id: 'string' }, 'SendInboxDraftResponseSuccess');
    const [atMx] = await eventually(
      async () => {
        const m = mx.messages.filter((x) => x.to.includes('erin@partner.test'));
        return m.length > 0 && m;
      },
      120_000,
      'the draft at the MX',
    );
    const parsed = await simpleParser(atMx!.raw);
    assert.equal(parsed.subject, 'Quarterly update');
    assert.equal(parsed.headers.get('x-campaign'), 'q3');
    assert.equal(parsed.attachments[0]!.content.toString(), 'a,b\n1,2\n');
    assert.equal(
      ok(await resend.inboxes.drafts.get({ ...inbox(), draftId: standalone.id }), 'sent draft').email_id,
      sent.id,
    );
    failed(
      await resend.inboxes.drafts.send({ ...inbox(), draftId: standalone.id }),
      409,
      'validation_error',
      /already sent/,
    );
    failed(
      await resend.inboxes.drafts.update({ ...inbox(), draftId: standalone.id, text: 'late' }),
      409,
      'validation_error',
      /no longer be changed/,
    );
    // A message we started: a thread of its own, in the sent folder.
    const sentThread = ok(await resend.inboxes.threads.list({ ...inbox(), folders: ['sent'] }), 'sent folder').data;
    assert.deepEqual(
      sentThread.map((t) => t.subject),
      ['Quarterly update'],
    );

    const replySent = ok(await resend.inboxes.drafts.send({ ...inbox(), draftId: reply.id }), 'send the reply draft');
    const [toBob] = await eventually(
      async () => {
        const m = mx.messages.filter((x) => x.to.includes('bob@other.test') && x.raw.includes('Draft answer'));
        return m.length > 0 && m;
      },
      120_000,
      'the reply draft',
    );
    assert.equal((await simpleParser(toBob!.raw)).inReplyTo, '<inv@other.test>');
    assert.equal(
      ok(
        await resend.inboxes.threads.emails.get({ ...inbox(), threadId: refundThread, emailId: replySent.id }),
        'in the thread',
      ).direction,
      'outbound',
    );
    assert.equal(
      ok(await resend.inboxes.threads.get({ ...inbox(), threadId: refundThread }), 'thread').id,
      refundThread,
    );
    assert.deepEqual(ok(await resend.inboxes.drafts.list(inbox()), 'after sending').data, []);

    const gone = ok(await resend.inboxes.drafts.create({ ...inbox(), text: 'to delete' }), 'create');
    assert.deepEqual(ok(await resend.inboxes.drafts.remove({ ...inbox(), draftId: gone.id }), 'drafts.remove'), {
      object: 'inbox_draft',
      id: gone.id,
      deleted: true,
    });
    failed(await resend.inboxes.drafts.get({ ...inbox(), draftId: gone.id }), 404, 'not_found');

    // Files within the limits of sending: 5 at most.
    const file = (i: number) => ({
      filename: `f${i}.txt`,
      content: Buffer.from(`file ${i}`),
      contentType: 'text/plain',
    });
    const five = ok(
      await resend.inboxes.drafts.create({ ...inbox(), text: 'five files', attachments: [0, 1, 2, 3, 4].map(file) }),
      'five files',
    );
    assert.equal(ok(await resend.inboxes.drafts.get({ ...inbox(), draftId: five.id }), 'get').attachments.length, 5);
    failed(
      await resend.inboxes.drafts.update({ ...inbox(), draftId: five.id, attachments: [0, 1, 2, 3, 4, 5].map(file) }),
      400,
      'validation_error',
      /attachments/,
    );
    ok(await resend.inboxes.drafts.update({ ...inbox(), draftId: five.id, attachments: null }), 'no files');
    assert.deepEqual(ok(await resend.inboxes.drafts.get({ ...inbox(), draftId: five.id }), 'get').attachments, []);
    ok(await resend.inboxes.drafts.remove({ ...inbox(), draftId: five.id }), 'remove');

    const empty = ok(await resend.inboxes.drafts.create({ ...inbox(), text: 'no one' }), 'create');
    failed(await resend.inboxes.drafts.send({ ...inbox(), draftId: empty.id }), 400, 'validation_error', /recipient/);
    failed(await resend.inboxes.drafts.create({ ...inbox() } as never), 400, 'validation_error');
    failed(
      await resend.inboxes.drafts.create({
        ...inbox(),
        text: 'x',
        attachments: [{ filename: 'empty.txt', content: '', contentType: 'text/plain' }],
      }),
      400,
      'validation_error',
      /attachments/,
    );
    failed(
      await resend.inboxes.drafts.update({ ...inbox(), draftId: empty.id, to: 'not an address' }),
      400,
      'validation_error',
      /to/,
    );
    failed(
      await resend.inboxes.drafts.update({ ...inbox(), draftId: empty.id, text: 'nul\u0000' }),
      400,
      'validation_error',
      /text/,
    );
    failed(
      await resend.inboxes.drafts.send({ ...inbox(), draftId: empty.id, headers: { References: '<a@b>' } }),
      400,
      'validation_error',
      /References/,
    );
  });

  it('agent: settings stored and served as the SDK declares; no agent acts on them, and the answer says so', async () => {
    const initial = ok(await resend.inboxes.agent.get(inbox()), 'agent.get');
    hasFields(
      initial,
      { object: 'string', instructions: 'string|null', tone: 'string|null', actions: 'array' },
      'InboxAgentSettings',
    );
    assert.deepEqual(
      { ...initial, runtime: undefined },
      { object: 'inbox_agent', instructions: null, tone: null, actions: [], forward_to: [], runtime: undefined },
    );
    assert.equal((initial as unknown as { runtime: { enabled: boolean } }).runtime.enabled, false);

    const updated = ok(
      await resend.inboxes.agent.update({
        ...inbox(),
        instructions: 'Answer billing questions.',
        tone: 'concise_professional',
        actions: ['draft_reply', 'add_labels'],
      }),
      'agent.update',
    );
    assert.equal(updated.object, 'inbox_agent');
    assert.equal(updated.id, inboxId);
    ok(await resend.inboxes.agent.update({ emailAddress: 'support@acme.test', tone: null }), 'by address');
    const read = ok(await resend.inboxes.agent.get(inbox()), 'agent.get');
    assert.equal(read.instructions, 'Answer billing questions.');
    assert.equal(read.tone, null);
    assert.deepEqual(read.actions, ['draft_reply', 'add_labels']);

    failed(
      await resend.inboxes.agent.update({ ...inbox(), tone: 'shouty' as 'concise_casual' }),
      400,
      'validation_error',
      /tone/,
    );
    failed(
      await resend.inboxes.agent.update({ ...inbox(), actions: ['send_everything' as 'archive'] }),
      400,
      'validation_error',
      /actions/,
    );
    ok(await resend.inboxes.agent.update({ ...inbox(), instructions: 'x'.repeat(10_000) }), '10,000 characters');
    failed(
      await resend.inboxes.agent.update({ ...inbox(), instructions: 'x'.repeat(10_001) }),
      400,
      'validation_error',
      /instructions/,
    );
    failed(await resend.inboxes.agent.update({ ...inbox() } as never), 400, 'validation_error');
  });
  it('a reply to mail the inbox address sent with emails.send starts its thread with that mail', async () => {
    const sent = ok(
      await resend.emails.send({
        from: 'Acme Support <support@acme.test>',
        to: 'frank@partner.test',
        subject: 'Welcome aboard',
        text: 'Hello Frank',
      }),
      'emails.send',
    );
    const messageId = (await eventually(async () => (await resend.emails.get(sent.id)).data, 120_000, 'the email'))
      .message_id;
    assert.ok(messageId);
    const answer = await deliver(
      await compose({
        from: 'frank@partner.test',
        to: 'support@acme.test',
        subject: 'Re: Welcome aboard',
        text: 'Thanks',
        messageId: '<frank-1@partner.test>',
        inReplyTo: messageId,
        references: [messageId],
      }),
      'frank@partner.test',
    );
    const thread = await threadOf('Welcome aboard');
    assert.equal(thread.email_count, 2);
    assert.equal(thread.folder, 'inbox');
    const emails = ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: thread.id }), 'emails').data;
    assert.deepEqual(
      emails.map((m) => [m.id, m.direction]),
      [
        [sent.id, 'outbound'],
        [answer, 'inbound'],
      ],
    );
    assert.equal(emails[0]!.text?.trim(), 'Hello Frank');
    assert.equal(emails[0]!.from, 'Acme Support <support@acme.test>');
    // A second answer joins the same thread; the sent mail is filed once.
    await deliver(
      await compose({
        from: 'frank@partner.test',
        to: 'support@acme.test',
        subject: 'Re: Welcome aboard',
        text: 'And another thing',
        messageId: '<frank-2@partner.test>',
        inReplyTo: messageId,
        references: [messageId],
      }),
      'frank@partner.test',
    );
    assert.equal(ok(await resend.inboxes.threads.get({ ...inbox(), threadId: thread.id }), 'get').id, thread.id);
    assert.equal(
      ok(await resend.inboxes.threads.emails.list({ ...inbox(), threadId: thread.id }), 'emails').data.length,
      3,
    );
  });
  it('dashboard: the receiving page links each inbox to its threads; folders, search, a thread, marking and moving it', async () => {
    const dash = new DashboardClient(server.httpUrl);
    assert.equal((await dash.signIn('inbox-dashboard-pw')).status, 303);
    const receiving = await dash.get('/dashboard/receiving');
    assert.equal(receiving.status, 200);
    assert.ok(receiving.text.includes(`/dashboard/receiving/inboxes/${inboxId}`), 'a link to the threads');
    const list = await dash.get(`/dashboard/receiving/inboxes/${inboxId}`);
    assert.equal(list.status, 200);
    assert.ok(list.text.includes('Invoice question'));
    assert.ok(!list.text.includes('Quarterly update'), 'sent threads are in their own folder');
    assert.ok(
      (await dash.get(`/dashboard/receiving/inboxes/${inboxId}?folder=sent`)).text.includes('Quarterly update'),
    );
    const found = await dash.get(`/dashboard/receiving/inboxes/${inboxId}?q=refund`);
    assert.ok(found.text.includes('Invoice question'));
    assert.ok(!found.text.includes('Welcome aboard'));
    assert.equal((await dash.get(`/dashboard/receiving/inboxes/${inboxId}?q=${'x'.repeat(501)}`)).status, 400);

    const thread = await dash.get(`/dashboard/receiving/inboxes/${inboxId}/threads/${refundThread}`);
    assert.equal(thread.status, 200);
    assert.ok(thread.text.includes('I would like a refund for the invoice.'));
    const moved = await dash.post(`/dashboard/receiving/inboxes/${inboxId}/threads/${refundThread}/folder/archive`, {
      _csrf: thread.csrf ?? '',
    });
    assert.equal(moved.status, 303);
    assert.equal(ok(await resend.inboxes.threads.get({ ...inbox(), threadId: refundThread }), 'get').folder, 'archive');
    const read = await dash.post(`/dashboard/receiving/inboxes/${inboxId}/threads/${refundThread}/read/yes`, {
      _csrf: thread.csrf ?? '',
    });
    assert.equal(read.status, 303);
    assert.equal(ok(await resend.inboxes.threads.get({ ...inbox(), threadId: refundThread }), 'get').read, true);
    assert.equal(
      (
        await dash.post(`/dashboard/receiving/inboxes/${inboxId}/threads/${refundThread}/folder/sent`, {
          _csrf: thread.csrf ?? '',
        })
      ).status,
      400,
    );
    assert.equal(
      (
        await dash.post(`/dashboard/receiving/inboxes/${inboxId}/threads/${refundThread}/folder/inbox`, {
          _csrf: 'forged',
        })
      ).status,
      403,
    );
    assert.equal(
      (await dash.get(`/dashboard/receiving/inboxes/${inboxId}/threads/00000000-0000-7000-8000-000000000000`)).status,
      404,
    );
  });
});

describe('the inbox agent: new messages passed to an OpenAI-compatible endpoint, its actions carried out within the settings', () => {
  let dns: TestDns;
  let server: TestServer;
  let chat: Awaited<ReturnType<typeof startChatServer>>;
  let resend: Resend;
  let inboxId: string;
  const deliver = async (raw: Buffer, from: string, to = ['help@acme.test']) => {
    const info = await nodemailer
      .createTransport({
        host: '127.0.0.1',
        port: server.inboundPort!,
        secure: false,
        tls: { rejectUnauthorized: false },
      })
      .sendMail({ envelope: { from, to }, raw });
    return /received as ([0-9a-f-]{36})/.exec(info.response)?.[1] ?? assert.fail(info.response);
  };
  const threadOfEmail = async (emailId: string) => {
    const threads = ok(
      await resend.inboxes.threads.list({ inboxId, limit: 100, folders: ['inbox', 'archive', 'spam', 'trash'] }),
      'threads',
    ).data;
    for (const t of threads) {
      const emails = ok(await resend.inboxes.threads.emails.list({ inboxId, threadId: t.id }), 'emails').data;
      if (emails.some((m) => m.id === emailId)) return t;
    }
    return assert.fail(`no thread holds ${emailId}`);
  };
  type Run = {
    status: string;
    attempts: number;
    error: string | null;
    email_id: string | null;
    actions: Array<{ type: string; result: string; detail?: string }>;
  };
  const runsOf = async (threadId: string) =>
    (ok(await resend.inboxes.threads.get({ inboxId, threadId }), 'thread') as unknown as { agent_runs: Run[] })
      .agent_runs;

  before(async () => {
    dns = await startDnsServer();
    chat = await startChatServer((message) => {
      if (message.includes('make it fail')) return { status: 500 };
      if (message.includes('rambling')) return { status: 200, content: 'Sure! I would archive this.' };
      if (message.includes('cheap pills'))
        return { status: 200, content: '```json\n{"actions":[{"type":"mark_as_spam"}]}\n```' };
      return {
        status: 200,
        content: JSON.stringify({
          actions: [
            { type: 'draft_reply', text: 'Thanks, we are looking into your invoice.' },
            { type: 'add_labels', labels: ['Billing', 'Nope'] },
            { type: 'archive' },
            { type: 'forward_thread', to: 'accounting@partner.test', text: 'FYI' },
            { type: 'assign_thread', assignee: 'someone' },
          ],
        }),
      };
    });
    server = await startTestServer({
      smtp: { inbound: { enabled: true, port: 0 } },
      delivery: { dnsServers: [dns.server] },
      dashboard: { password: 'agent-dashboard-pw' },
      inboxes: {
        agent: {
          url: chat.url,
          model: 'test-model',
          apiKey: 'sk-test-agent',
          allowPrivateNetworks: true,
          pollInterval: 20,
          attempts: 1,
          timeoutSeconds: 5,
        },
      },
    });
    await addVerifiedDomain(server, dns, 'acme.test');
    resend = new Resend(await server.key(), { baseUrl: server.httpUrl });
    inboxId = ok(await resend.inboxes.create({ emailAddress: 'help@acme.test' }), 'inbox').id;
    ok(await resend.inboxes.labels.create({ inboxId, name: 'Billing' }), 'label');
  });
  after(async () => {
    await server?.close();
    await chat?.close();
    await dns?.close();
  });

  it('does nothing for an inbox whose agent may do nothing; says it runs, and with which model', async () => {
    const settings = ok(await resend.inboxes.agent.get({ inboxId }), 'agent.get') as unknown as {
      runtime: { enabled: boolean; model: string; reason: string | null };
    };
    assert.deepEqual(settings.runtime, { enabled: true, reason: null, model: 'test-model' });
    const id = await deliver(
      await compose({ from: 'ann@sender.test', to: 'help@acme.test', subject: 'Before the agent', text: 'hello' }),
      'ann@sender.test',
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(await runsOf((await threadOfEmail(id)).id), []);
    assert.equal(chat.requests.length, 0);
  });

  it('passes a new message with its thread to the endpoint and carries out the allowed actions, recording each on the thread', async () => {
    ok(
      await resend.inboxes.agent.update({
        inboxId,
        instructions: 'Label billing questions and draft an answer.',
        tone: 'concise_professional',
        actions: ['draft_reply', 'add_labels', 'archive', 'mark_as_spam'],
      }),
      'agent.update',
    );
    const id = await deliver(
      await compose({
        from: 'Ann <ann@sender.test>',
        to: 'help@acme.test',
        subject: 'Invoice 7',
        text: 'my invoice is wrong',
        messageId: '<inv7@sender.test>',
      }),
      'ann@sender.test',
    );
    const thread = await threadOfEmail(id);
    const [run] = await eventually(
      async () => {
        const r = await runsOf(thread.id);
        return r[0]?.status === 'done' && r;
      },
      120_000,
      'the agent run',
    );
    assert.equal(run!.email_id, id);

    const request = chat.requests.at(-1)!;
    assert.equal(request.path, '/v1/chat/completions');
    assert.equal(request.headers.authorization, 'Bearer sk-test-agent');
    assert.equal(request.body.model, 'test-model');
    assert.equal(request.body.messages[0].role, 'system');
    assert.match(request.body.messages[0].content, /help@acme\.test/);
    assert.match(request.body.messages[0].content, /Label billing questions and draft an answer\./);
    assert.match(
      request.body.messages[0].content,
      /only these actions: draft_reply, add_labels, archive, mark_as_spam\./,
    );
    const quoted = JSON.parse(request.body.messages[1].content).untrusted_email_thread.at(-1);
    assert.deepEqual(
      [quoted.from, quoted.to, quoted.subject],
      ['Ann <ann@sender.test>', ['help@acme.test'], 'Invoice 7'],
    );
    assert.match(quoted.text, /my invoice is wrong/);

    assert.deepEqual(
      run!.actions.map((a) => [a.type, a.result]),
      [
        ['draft_reply', 'done'],
        ['add_labels', 'done'],
        ['archive', 'done'],
        ['forward_thread', 'refused'],
        ['assign_thread', 'refused'],
      ],
    );
    assert.match(run!.actions[1]!.detail!, /no such label: Nope/);
    const after = ok(await resend.inboxes.threads.get({ inboxId, threadId: thread.id }), 'thread');
    assert.equal(after.folder, 'archive');
    assert.deepEqual(
      after.labels.map((l) => l.name),
      ['Billing'],
    );
    const drafts = ok(await resend.inboxes.drafts.list({ inboxId }), 'drafts').data;
    assert.equal(drafts.length, 1);
    assert.equal(drafts[0]!.thread_id, thread.id);
    assert.equal(drafts[0]!.reply_to_email_id, id);
    assert.equal(drafts[0]!.snippet, 'Thanks, we are looking into your invoice.');
    assert.deepEqual(drafts[0]!.to, ['ann@sender.test']);
    // The dashboard shows the run on the thread.
    const dash = new DashboardClient(server.httpUrl);
    assert.equal((await dash.signIn('agent-dashboard-pw')).status, 303);
    const page = await dash.get(`/dashboard/receiving/inboxes/${inboxId}/threads/${thread.id}`);
    assert.match(page.text, /<h2>Agent<\/h2>/);
    assert.match(page.text, /forward_thread: refused/);
    // Nothing was sent: a reply is a draft, and forwarding is not allowed here.
    assert.equal(ok(await resend.emails.list(), 'emails').data.length, 0);
  });

  it('takes a fenced JSON answer; refuses an answer that is not JSON; records a failed endpoint', async () => {
    const spam = await deliver(
      await compose({ from: 'x@spam.test', to: 'help@acme.test', subject: 'Deal', text: 'cheap pills' }),
      'x@spam.test',
    );
    const spamThread = await threadOfEmail(spam);
    await eventually(async () => (await runsOf(spamThread.id))[0]?.status === 'done', 120_000, 'spam run');
    assert.equal(ok(await resend.inboxes.threads.get({ inboxId, threadId: spamThread.id }), 'thread').folder, 'spam');

    const rambling = await deliver(
      await compose({ from: 'bob@sender.test', to: 'help@acme.test', subject: 'Chat', text: 'rambling please' }),
      'bob@sender.test',
    );
    const ramblingThread = await threadOfEmail(rambling);
    const [bad] = await eventually(
      async () => {
        const r = await runsOf(ramblingThread.id);
        return r[0]?.status === 'failed' && r;
      },
      120_000,
      'rambling run',
    );
    assert.match(bad!.error!, /not JSON/);
    assert.equal(
      ok(await resend.inboxes.threads.get({ inboxId, threadId: ramblingThread.id }), 'thread').folder,
      'inbox',
      'nothing done',
    );

    const failing = await deliver(
      await compose({ from: 'carl@sender.test', to: 'help@acme.test', subject: 'Oops', text: 'make it fail' }),
      'carl@sender.test',
    );
    const failingThread = await threadOfEmail(failing);
    const [failed] = await eventually(
      async () => {
        const r = await runsOf(failingThread.id);
        return r[0]?.status === 'failed' && r;
      },
      120_000,
      'failing run',
    );
    assert.equal(failed!.attempts, 1, 'inboxes.agent.attempts');
    assert.match(failed!.error!, /HTTP 500/);
  });

  it('takes over a run whose node died once its lease runs out, and never one whose lease holds', async () => {
    const id = await deliver(
      await compose({ from: 'dora@sender.test', to: 'help@acme.test', subject: 'Spam?', text: 'cheap pills again' }),
      'dora@sender.test',
    );
    const thread = await threadOfEmail(id);
    await eventually(async () => (await runsOf(thread.id))[0]?.status === 'done', 120_000, 'the first run');
    // The run as a node that died mid-run leaves it: running, leased by an owner that will never renew it.
    const db = server.runtime.store.db;
    const [run] = await db
      .selectFrom('inbox_agent_runs')
      .select(['id', 'attempts'])
      .where('thread_id', '=', thread.id)
      .execute();
    const requestsBefore = chat.requests.length;
    const leaseUntil = Date.now() + 1500;
    await db
      .updateTable('inbox_agent_runs')
      .set({ status: 'running', lease_owner: 'dead-node:1:0', lease_until: leaseUntil, actions: null, attempts: 0 })
      .where('id', '=', run!.id)
      .execute();
    await new Promise((r) => setTimeout(r, 1000));
    const held = await db
      .selectFrom('inbox_agent_runs')
      .select(['status', 'lease_owner'])
      .where('id', '=', run!.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      held,
      { status: 'running', lease_owner: 'dead-node:1:0' },
      'a live lease is not taken (the job polls every 20 ms)',
    );
    assert.equal(chat.requests.length, requestsBefore);
    const [taken] = await eventually(
      async () => {
        const r = await runsOf(thread.id);
        return r[0]?.status === 'done' && r;
      },
      120_000,
      'the run taken over',
    );
    assert.ok(Date.now() >= leaseUntil);
    assert.equal(taken!.attempts, 1);
    assert.deepEqual(
      taken!.actions.map((a) => [a.type, a.result]),
      [['mark_as_spam', 'done']],
    );
    assert.equal(chat.requests.length, requestsBefore + 1, 'asked the model once more');
    const after = await db
      .selectFrom('inbox_agent_runs')
      .select(['lease_owner', 'lease_until'])
      .where('id', '=', run!.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(after, { lease_owner: null, lease_until: null });
  });
});
