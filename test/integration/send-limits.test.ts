import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

describe('sending: idempotency, keyset pagination and rate limits', () => {
  let server: TestServer;
  let dns: TestDns;
  let key: string;
  // Stands still at the start of a second: every request of a test shares one window.
  const clock = manualClock(Math.floor(Date.now() / 1000) * 1000 + 10);
  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({ delivery: { dnsServers: [dns.server], enabled: false } }, { clock });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'acme.example');
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  const message = (n: number) => ({
    from: 'hello@acme.example',
    to: `r${n}@example.org`,
    subject: `m${n}`,
    html: `<p>${n}</p>`,
    type: 'marketing',
  });
  const send = (body: unknown, headers: Record<string, string> = {}) =>
    request(server.httpUrl, 'POST', '/v1/emails', { key, body, headers });
  const count = async () =>
    (
      await server.runtime.store.db
        .selectFrom('emails')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n;

  it('replays the same request for the same key and sends once', async () => {
    clock.advance(1000);
    const before = Number(await count());
    const first = await send(message(1), { 'Idempotency-Key': 'order-1' });
    assert.equal(first.status, 200, show(first));
    const again = await send({ ...message(1) }, { 'Idempotency-Key': 'order-1' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(Number(await count()), before + 1, 'one email');

    const different = await send(message(2), { 'Idempotency-Key': 'order-1' });
    assert.equal(different.status, 409, show(different));
    assert.equal(different.body.error.code, 'invalid_idempotent_request');

    const tooLong = await send(message(3), { 'Idempotency-Key': 'k'.repeat(257) });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.error.message, /^Idempotency-Key:/);

    // Keys belong to a workspace: another workspace's same key is a new request.
    const other = await server.runtime.services.workspaces.create('other');
    await addVerifiedDomain(server, dns, 'acme.example', other.id);
    const otherKey = await server.key({ workspaceId: other.id });
    const elsewhere = await request(server.httpUrl, 'POST', '/v1/emails', {
      key: otherKey,
      body: message(1),
      headers: { 'Idempotency-Key': 'order-1' },
    });
    assert.equal(elsewhere.status, 200);
    assert.notEqual(elsewhere.body.id, first.body.id);
  });

  it('sends once under concurrent requests with one key: one 200, the rest replay or 409 concurrent', async () => {
    clock.advance(1000);
    const before = Number(await count());
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => send(message(7), { 'Idempotency-Key': 'concurrent-7' })),
    );
    const ok = responses.filter((r) => r.status === 200);
    const conflicts = responses.filter((r) => r.status === 409);
    assert.equal(ok.length + conflicts.length, 20, responses.map(show).join('\n'));
    assert.ok(ok.length >= 1);
    assert.equal(new Set(ok.map((r) => r.body.id)).size, 1, 'every success names the same email');
    for (const c of conflicts) assert.equal(c.body.error.code, 'concurrent_idempotent_requests');
    assert.equal(Number(await count()), before + 1, 'queued once');
  });

  it('releases the key when the request fails, so a corrected retry can use it', async () => {
    clock.advance(1000);
    const bad = await send({ ...message(8), to: 'nope' }, { 'Idempotency-Key': 'retry-me' });
    assert.equal(bad.status, 400);
    const fixed = await send({ ...message(8), to: 'nope' }, { 'Idempotency-Key': 'retry-me' });
    assert.equal(fixed.status, 400, 'same body, same answer: re-run, not replayed');
    const good = await send(message(8), { 'Idempotency-Key': 'retry-me' });
    assert.equal(good.status, 200, show(good));
  });

  it('pages through every email exactly once in both directions', async () => {
    clock.advance(1000);
    for (let i = 0; i < 3; i++) {
      const batch = await request(server.httpUrl, 'POST', '/v1/emails/batch', {
        key,
        body: Array.from({ length: 9 }, (_, j) => message(100 + i * 9 + j)),
      });
      assert.equal(batch.status, 200, show(batch));
      clock.advance(1000);
    }
    const all = (
      await server.runtime.store.db
        .selectFrom('emails')
        .select('id')
        .where('workspace_id', '=', server.workspaceId)
        .orderBy('id', 'desc')
        .execute()
    ).map((r) => r.id);
    assert.ok(all.length >= 27);

    const forward: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const res = await request(server.httpUrl, 'GET', `/v1/emails?limit=7${cursor ? `&after=${cursor}` : ''}`, {
        key,
      });
      assert.equal(res.status, 200, show(res));
      assert.equal(res.body.object, 'list');
      forward.push(...res.body.data.map((e: { id: string }) => e.id));
      assert.equal(res.body.next_cursor, res.body.data.at(-1)?.id ?? null);
      if (!res.body.has_more) break;
      cursor = res.body.next_cursor;
    }
    assert.deepEqual(forward, all, 'newest first, each once');

    const backward: string[] = [];
    cursor = all.at(-1);
    backward.push(cursor!);
    for (let page = 0; page < 100; page++) {
      const res = await request(server.httpUrl, 'GET', `/v1/emails?limit=5&before=${cursor}`, { key });
      const ids = res.body.data.map((e: { id: string }) => e.id);
      backward.unshift(...ids);
      if (!res.body.has_more) break;
      cursor = ids[0];
    }
    assert.deepEqual(backward, all);

    const clamped = await request(server.httpUrl, 'GET', '/v1/emails?limit=1000', { key });
    assert.equal(clamped.body.data.length, Math.min(100, all.length), 'limit clamped to 100');
    const badCursor = await request(server.httpUrl, 'GET', '/v1/emails?after=xyz', { key });
    assert.equal(badCursor.status, 400);
    const filtered = await request(server.httpUrl, 'GET', '/v1/emails?status=delivered', { key });
    assert.deepEqual(filtered.body.data, []);
  });

  it('demotes transactional mail over 5 per second to marketing priority, without error', async () => {
    clock.advance(1000);
    const priorities: string[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(server.httpUrl, 'POST', '/api/v1/send', {
        key,
        body: { to: `t${i}@example.org`, subject: 's', html: 'h', from_email: 'hello@acme.example' },
      });
      assert.equal(res.status, 202, show(res));
      assert.equal(res.headers.get('x-ratelimit-limit'), '5');
      const detail = await request(server.httpUrl, 'GET', `/v1/emails/${res.body.id}`, { key });
      priorities.push(detail.body.priority);
      if (i >= 5)
        assert.match(res.body.message, /marketing priority: the transactional rate of 5 per second was exceeded/);
    }
    assert.deepEqual(priorities, [
      'transactional',
      'transactional',
      'transactional',
      'transactional',
      'transactional',
      'marketing',
      'marketing',
    ]);
  });

  it('refuses marketing mail over 500 per second with 429 and queues nothing of that request', async () => {
    clock.advance(1000);
    const batch = (n: number, offset: number) => Array.from({ length: n }, (_, i) => message(1000 + offset + i));
    for (let i = 0; i < 5; i++) {
      const res = await request(server.httpUrl, 'POST', '/v1/emails/batch', { key, body: batch(100, i * 100) });
      assert.equal(res.status, 200, show(res));
    }
    const before = Number(await count());
    const over = await request(server.httpUrl, 'POST', '/v1/emails', { key, body: message(2000) });
    assert.equal(over.status, 429, show(over));
    assert.equal(over.body.error.code, 'rate_limited');
    assert.equal(over.headers.get('retry-after'), '1');
    assert.equal(over.headers.get('x-ratelimit-remaining'), '0');
    const legacy = await request(server.httpUrl, 'POST', '/api/v1/send', {
      key,
      body: { to: 'x@example.org', subject: 's', html: 'h', type: 'marketing', from_email: 'hello@acme.example' },
    });
    assert.equal(legacy.status, 429);
    assert.equal(legacy.body.code, 'RATE_LIMITED');
    assert.equal(Number(await count()), before);
    clock.advance(1000);
    assert.equal(
      (await request(server.httpUrl, 'POST', '/v1/emails', { key, body: message(2001) })).status,
      200,
      'next second',
    );
  });
});
