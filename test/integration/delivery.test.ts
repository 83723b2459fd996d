import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { parseReturnPath } from '../../src/delivery/return-path.js';
import { emailState, eventually, routeDomain, verifyDkim } from '../helpers/delivery.js';
import type { TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { queueEmail } from '../helpers/mail.js';
import type { TestMx } from '../helpers/mx-server.js';
import type { TestServer } from '../helpers/server.js';

/**
 * The delivery engine end to end with real parts: `mailsvc serve` in-process, a real DNS
 * server and a real SMTP server (the recipient's MX) on loopback.
 */
describe('delivery to a loopback MX', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer;
  let key: string;
  const SENDER = 'sender.test';

  before(async () => {
    ({ server, dns, mx } = rig = await startDeliveringServer({
      delivery: { retrySchedule: [1], pollInterval: 50, signingThreads: 1 },
      senders: [SENDER],
    }));
    key = await server.key();
  });
  after(async () => {
    await rig?.close();
  });
  beforeEach(() => {
    mx.messages.length = 0;
    mx.sessions.clear();
    mx.hooks = {};
  });

  const db = () => server.runtime.store.db;
  const queue = (to: string[], extra: Partial<Parameters<typeof queueEmail>[1]> = {}) =>
    queueEmail(db(), { workspaceId: server.workspaceId, domain: SENDER, to, ...extra }).then((email) => {
      server.workers.wake('delivery');
      return email;
    });
  const settled = (emailId: string, statuses: string[]) =>
    eventually(
      async () => {
        const state = await emailState(db(), emailId);
        return statuses.includes(state.email.status) ? state : undefined;
      },
      15_000,
      `email ${emailId} to reach ${statuses.join('|')}`,
    );

  /** Sends through the real API (POST /v1/emails) and returns the email id. */
  const send = async (to: string | string[], extra: Record<string, unknown> = {}) => {
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: {
        from: `Sender <hello@${SENDER}>`,
        to,
        subject: 'Your receipt',
        html: '<p>Thank you for your order.</p>',
        metadata: { order: 42 },
        tags: ['receipts'],
        ...extra,
      },
    });
    assert.equal(res.status, 200, show(res));
    return res.body.id as string;
  };
  /** GET /v1/emails/{id} until the email reaches one of `statuses`. */
  const apiSettled = (id: string, statuses: string[]) =>
    eventually(
      async () => {
        const res = await request(server.httpUrl, 'GET', `/v1/emails/${id}`, { key });
        return statuses.includes(res.body?.status) ? res.body : undefined;
      },
      15_000,
      `email ${id} to reach ${statuses.join('|')} in GET /v1/emails/{id}`,
    );

  it('delivers mail sent through the API DKIM-signed over STARTTLS, with a VERP return path, shown delivered with its attempt log', async () => {
    const id = await send('alice@dest.test');
    const [received] = await mx.waitFor(1);
    assert.ok(received);
    assert.deepEqual(received.to, ['alice@dest.test']);
    assert.equal(received.ehlo, 'mta.mailsvc.test');
    assert.equal(received.secure, true, 'STARTTLS was used');
    assert.equal(received.messageId, `<${id}@${SENDER}>`);
    assert.match(received.from, /^b-[0-9a-f]{32}-[0-9a-f]+@bounces\.sender\.test$/);
    assert.equal(parseReturnPath(received.from, server.runtime.deps.secretKey), id, 'the return path names the email');

    // An independent verifier (mailauth's), with the keys published in DNS as the README says.
    const results = await verifyDkim(received.raw, dns);
    assert.equal(results.length, 1);
    assert.equal(results[0]!.status.result, 'pass', JSON.stringify(results[0]!.status));
    assert.equal(results[0]!.signingDomain, SENDER);
    const header = received.raw.toString('latin1').split('\r\n\r\n')[0]!;
    assert.match(header, /^DKIM-Signature: .*a=rsa-sha256/m);
    assert.match(header, /c=relaxed\/relaxed/);
    const signed = /\bh=([^;]*);/
      .exec(header)![1]!
      .split(':')
      .map((h) => h.trim().toLowerCase());
    for (const name of ['from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'content-type'])
      assert.ok(signed.includes(name), `${name} is signed`);

    const email = await apiSettled(id, ['delivered']);
    assert.equal(email.recipients.length, 1);
    assert.equal(email.recipients[0].email, 'alice@dest.test');
    assert.equal(email.recipients[0].status, 'delivered');
    assert.equal(email.recipients[0].attempts, 1);
    assert.equal(email.attempts.length, 1);
    assert.equal(email.attempts[0].outcome, 'delivered');
    assert.equal(email.attempts[0].mx_host, 'mx.dest.test');
    assert.equal(email.attempts[0].code, 250);
    assert.equal(email.attempts[0].tls, true);

    const state = await emailState(db(), id);
    assert.equal(state.items[0]!.lease_owner, null);
    assert.deepEqual(state.events.map((e) => e.type).sort(), ['email.delivered', 'email.sent']);
    const data = state.events.find((e) => e.type === 'email.delivered')!.data;
    assert.equal(data.email_id, id);
    assert.equal(data.message_id, `<${id}@${SENDER}>`);
    assert.equal(data.recipient, 'alice@dest.test');
    assert.deepEqual(data.to, ['alice@dest.test']);
    assert.equal(data.subject, 'Your receipt');
    assert.deepEqual(data.metadata, { order: 42 });
    assert.deepEqual(data.tags, ['receipts']);
    assert.equal(data.smtp.code, 250);
    assert.ok(Date.parse(data.timestamp) > 0);
  });

  it('sends several recipients of one domain in one transaction and reuses the connection', async () => {
    const first = await queue(['a1@dest.test', 'a2@dest.test', 'a3@dest.test']);
    await mx.waitFor(1);
    await settled(first.id, ['delivered']);
    assert.equal(mx.messages.length, 1, 'one transaction');
    assert.deepEqual([...mx.messages[0]!.to].sort(), ['a1@dest.test', 'a2@dest.test', 'a3@dest.test']);
    const second = await queue(['b1@dest.test']);
    await settled(second.id, ['delivered']);
    assert.equal(mx.messages.length, 2);
    assert.equal(mx.messages[1]!.sessionId, mx.messages[0]!.sessionId, 'the second message reused the session');
    assert.equal(mx.sessions.get(mx.messages[0]!.sessionId), 2, 'two transactions on one connection');
  });

  it('defers on 451, then delivers on the retry', async () => {
    let calls = 0;
    mx.hooks.onData = () =>
      ++calls === 1 ? { code: 451, text: '4.3.0 Temporary local problem, try later' } : undefined;
    const email = await queue(['retry@dest.test']);
    const state = await settled(email.id, ['delivered']);
    assert.equal(calls, 2);
    assert.deepEqual(
      state.attempts.map((a) => [a.outcome, a.code]),
      [
        ['deferred', 451],
        ['delivered', 250],
      ],
    );
    assert.equal(state.attempts[0]!.category, 'capacity');
    assert.equal(state.events[0]!.type, 'email.delivery_delayed');
    assert.deepEqual(
      state.events
        .map((e) => e.type)
        .slice(1)
        .sort(),
      ['email.delivered', 'email.sent'],
    );
    assert.equal(state.events[0]!.data.smtp.code, 451);
    assert.ok(state.events[0]!.data.next_attempt_at);
    assert.equal(state.items[0]!.attempts, 2);
  });

  it('bounces on 550, suppresses the address, and never connects for it again', async () => {
    mx.hooks.onRcpt = (address) =>
      address === 'gone@dest.test'
        ? { code: 550, text: '5.1.1 <gone@dest.test>: Recipient address rejected: User unknown' }
        : undefined;
    const id = await send(['gone@dest.test', 'kept@dest.test']);
    await apiSettled(id, ['delivered']);
    const state = await emailState(db(), id);
    const byRecipient = Object.fromEntries(state.items.map((i) => [i.recipient, i]));
    assert.equal(byRecipient['gone@dest.test']!.status, 'bounced');
    assert.equal(byRecipient['gone@dest.test']!.last_code, 550);
    assert.equal(byRecipient['kept@dest.test']!.status, 'delivered');
    const bounce = state.events.find((e) => e.type === 'email.bounced')!;
    assert.equal(bounce.data.recipient, 'gone@dest.test');
    assert.deepEqual(bounce.data.bounce.type, 'hard');
    assert.equal(bounce.data.bounce.category, 'unknown_user');
    assert.equal(bounce.data.smtp.code, 550);
    assert.match(bounce.data.smtp.response, /User unknown/);

    const listed = await request(server.httpUrl, 'GET', '/v1/suppressions/gone@dest.test', { key });
    assert.equal(listed.status, 200, show(listed));
    assert.equal(listed.body.reason, 'hard_bounce');
    assert.equal(listed.body.email_id, id);

    const sessionsBefore = mx.sessions.size;
    const again = await send('Gone@dest.test');
    const later = await apiSettled(again, ['suppressed']);
    assert.equal(later.recipients[0].status, 'suppressed');
    assert.equal(later.attempts.length, 0, 'no attempt: nothing was sent');
    const events = (await emailState(db(), again)).events;
    assert.deepEqual(
      events.map((e) => e.type),
      ['email.suppressed'],
    );
    assert.equal(events[0]!.data.suppression.reason, 'hard_bounce');
    assert.equal(mx.sessions.size, sessionsBefore, 'no connection was opened');
  });

  it('bounces mail for a domain with a null MX without connecting', async () => {
    dns.set('nullmx.test', 'MX', [{ preference: 0, exchange: '.' }]);
    const email = await queue(['x@nullmx.test']);
    const state = await settled(email.id, ['bounced']);
    assert.equal(state.items[0]!.last_code, 556);
    assert.equal(state.attempts[0]!.category, 'null_mx');
    const bounce = state.events.find((e) => e.type === 'email.bounced')!;
    assert.equal(bounce.data.bounce.category, 'null_mx');
    assert.equal(bounce.data.bounce.type, 'hard');
    assert.equal(mx.sessions.size, 0);
  });

  it('bounces mail for a domain that does not exist', async () => {
    const email = await queue(['x@no-such-domain.test']);
    const state = await settled(email.id, ['bounced']);
    assert.equal(state.attempts[0]!.category, 'bad_domain');
  });

  it('bounces mail for a domain that exists but has no MX, A or AAAA record', async () => {
    dns.set('noaddress.test', 'TXT', ['v=spf1 -all']);
    const email = await queue(['x@noaddress.test']);
    const state = await settled(email.id, ['bounced']);
    assert.equal(state.attempts[0]!.category, 'bad_domain');
    assert.match(state.attempts[0]!.response!, /no MX, A or AAAA record/);
  });

  it('falls back to the next MX by preference when the first refuses connections', async () => {
    // The preferred host only has an IPv6 address where nothing listens: connection refused.
    routeDomain(dns, 'fallback.test', [
      { name: 'mx2.fallback.test', preference: 20, a: ['127.0.0.1'] },
      { name: 'mx1.fallback.test', preference: 10, aaaa: ['::1'] },
    ]);
    const email = await queue(['f@fallback.test']);
    const state = await settled(email.id, ['delivered']);
    assert.equal(state.attempts.length, 1, 'one attempt, two hosts tried');
    assert.equal(state.attempts[0]!.mx_host, 'mx2.fallback.test');
    assert.ok(dns.queries.includes('AAAA mx1.fallback.test'), 'the preferred host was tried first');
    assert.equal(mx.messages.at(-1)!.to[0], 'f@fallback.test');
  });

  it('delivers to the domain itself when it has no MX record (implicit MX)', async () => {
    dns.set('implicit.test', 'A', ['127.0.0.1']);
    const email = await queue(['i@implicit.test']);
    const state = await settled(email.id, ['delivered']);
    assert.equal(state.attempts[0]!.mx_host, 'implicit.test');
  });

  it('simulates test sends without a connection, with the same events', async () => {
    const email = await queue(
      ['someone@dest.test', 'bounced@simulator.mailsvc.dev', 'complained+x@simulator.mailsvc.dev'],
      { test: true },
    );
    const state = await settled(email.id, ['delivered']);
    assert.equal(mx.sessions.size, 0, 'no connection');
    const types = state.events.map((e) => `${e.type} ${e.data.recipient}`).sort();
    assert.deepEqual(types, [
      'email.bounced bounced@simulator.mailsvc.dev',
      'email.complained complained+x@simulator.mailsvc.dev',
      'email.delivered complained+x@simulator.mailsvc.dev',
      'email.delivered someone@dest.test',
      'email.sent complained+x@simulator.mailsvc.dev',
      'email.sent someone@dest.test',
    ]);
    assert.equal(state.attempts.length, 3, 'simulated attempts are recorded');
    const suppressed = await db()
      .selectFrom('suppressions')
      .selectAll()
      .where('address', '=', 'bounced@simulator.mailsvc.dev')
      .executeTakeFirst();
    assert.equal(suppressed, undefined, 'simulated bounces leave the suppression list alone');
  });

  it('delivers transactional mail before marketing mail', async () => {
    await server.workers.stop();
    // Nothing runs now: queue marketing first, then transactional, and start a fresh engine.
    const marketing = await queueEmail(db(), {
      workspaceId: server.workspaceId,
      domain: SENDER,
      to: ['m@dest.test'],
      type: 'marketing',
    });
    const transactional = await queueEmail(db(), {
      workspaceId: server.workspaceId,
      domain: SENDER,
      to: ['t@dest.test'],
      type: 'transactional',
    });
    const items = await db()
      .selectFrom('queue_items')
      .select(['email_id', 'priority'])
      .where('email_id', 'in', [marketing.id, transactional.id])
      .execute();
    assert.deepEqual(
      Object.fromEntries(items.map((i) => [i.email_id === marketing.id ? 'marketing' : 'transactional', i.priority])),
      { marketing: 1, transactional: 0 },
    );
    const { claimDueQueueItems } = await import('../../src/store/queue.js');
    const claimed = await db()
      .transaction()
      .execute((trx) =>
        claimDueQueueItems(
          trx,
          server.runtime.store.dialect,
          { owner: 'probe', now: Date.now(), until: Date.now() + 1 },
          1,
        ),
      );
    assert.equal(claimed.length, 1);
    assert.equal(claimed[0]!.email_id, transactional.id, 'the transactional row is claimed first');
  });
});
