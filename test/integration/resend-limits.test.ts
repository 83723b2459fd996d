import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, show, type ApiResponse } from '../helpers/http.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

/** The limits the Resend-shaped routes add, each at, just under and just over it. */
describe('limits of the Resend-shaped routes', () => {
  const clock = manualClock();
  let server: TestServer;
  let key: string;
  let segmentId: string;

  before(async () => {
    server = await startTestServer({}, { clock });
    key = await server.key({ test: true });
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'shop.example' });
    segmentId = (await call('POST', '/v1/segments', { name: 'All' })).body.id;
  });
  after(() => server.close());

  const call = (method: string, path: string, body?: unknown): Promise<ApiResponse> =>
    request(server.httpUrl, method, path, { key, body });
  const expect = (res: ApiResponse, status: number, message?: RegExp) => {
    assert.equal(res.status, status, show(res));
    if (message) assert.match(res.body.error.message, message);
  };
  const emails = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}@example.org`);

  it('suppression batches: 1 to 1,000 addresses', async () => {
    expect(await call('POST', '/v1/suppressions/batch/add', { emails: emails(999, 'a') }), 200);
    const full = await call('POST', '/v1/suppressions/batch/add', { emails: emails(1000, 'b') });
    expect(full, 200);
    assert.equal(full.body.data.length, 1000);
    expect(
      await call('POST', '/v1/suppressions/batch/add', { emails: emails(1001, 'c') }),
      400,
      /^emails: must list 1 to 1000/,
    );
    expect(await call('POST', '/v1/suppressions/batch/add', { emails: [] }), 400, /^emails:/);
    expect(await call('POST', '/v1/suppressions/batch/remove', { emails: emails(1001, 'b') }), 400, /^emails:/);
    const removed = await call('POST', '/v1/suppressions/batch/remove', { emails: emails(1000, 'b') });
    expect(removed, 200);
    assert.ok(removed.body.data.every((d: { deleted: boolean }) => d.deleted));
    assert.equal(
      (await call('GET', '/v1/suppressions?limit=1')).body.pagination.total,
      999,
      'the refused batch added nothing',
    );
  });

  it('templates: 50 variables with keys of up to 50 characters; aliases of up to 100', async () => {
    const vars = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `V${i}`, type: 'string' }));
    expect(await call('POST', '/v1/templates', { name: 't49', html: 'h', variables: vars(49) }), 201);
    expect(await call('POST', '/v1/templates', { name: 't50', html: 'h', variables: vars(50) }), 201);
    expect(
      await call('POST', '/v1/templates', { name: 't51', html: 'h', variables: vars(51) }),
      400,
      /^variables: at most 50/,
    );
    expect(
      await call('POST', '/v1/templates', {
        name: 'k',
        html: 'h',
        variables: [{ key: `K${'x'.repeat(48)}`, type: 'string' }],
      }),
      201,
    );
    expect(
      await call('POST', '/v1/templates', {
        name: 'k',
        html: 'h',
        variables: [{ key: `K${'x'.repeat(49)}`, type: 'string' }],
      }),
      201,
    );
    expect(
      await call('POST', '/v1/templates', {
        name: 'k',
        html: 'h',
        variables: [{ key: `K${'x'.repeat(50)}`, type: 'string' }],
      }),
      400,
      /^variables\[0\]\.key:/,
    );
    expect(
      await call('POST', '/v1/templates', {
        name: 'k',
        html: 'h',
        variables: [{ key: 'N', type: 'number', fallback_value: 'two' }],
      }),
      400,
      /^variables\[0\]\.fallback_value: must be a number/,
    );
    expect(await call('POST', '/v1/templates', { name: 'a', html: 'h', alias: `a${'x'.repeat(98)}` }), 201);
    expect(await call('POST', '/v1/templates', { name: 'a', html: 'h', alias: `b${'x'.repeat(99)}` }), 201);
    expect(await call('POST', '/v1/templates', { name: 'a', html: 'h', alias: `c${'x'.repeat(100)}` }), 400, /^alias:/);
  });

  it('topics: names of up to 50 characters, descriptions of up to 200', async () => {
    expect(await call('POST', '/v1/topics', { name: 'n'.repeat(49), default_subscription: 'opt_in' }), 201);
    expect(
      await call('POST', '/v1/topics', {
        name: 'n'.repeat(50),
        description: 'd'.repeat(200),
        default_subscription: 'opt_out',
      }),
      201,
    );
    expect(await call('POST', '/v1/topics', { name: 'n'.repeat(51), default_subscription: 'opt_in' }), 400, /^name:/);
    expect(
      await call('POST', '/v1/topics', { name: 'n', description: 'd'.repeat(201), default_subscription: 'opt_in' }),
      400,
      /^description:/,
    );
    expect(
      await call('POST', '/v1/topics', { name: 'n', default_subscription: 'sometimes' }),
      400,
      /^default_subscription:/,
    );
  });

  it('broadcasts: preview text of up to 500 characters; scheduled at most 30 days ahead', async () => {
    const base = { segment_id: segmentId, from: 'news@shop.example', subject: 's', html: '<p>h</p>' };
    expect(await call('POST', '/v1/broadcasts', { ...base, preview_text: 'p'.repeat(499) }), 201);
    expect(await call('POST', '/v1/broadcasts', { ...base, preview_text: 'p'.repeat(500) }), 201);
    expect(await call('POST', '/v1/broadcasts', { ...base, preview_text: 'p'.repeat(501) }), 400, /^preview_text:/);
    const day = 24 * 3600 * 1000;
    const at = (ms: number) => new Date(clock.now() + ms).toISOString();
    expect(await call('POST', '/v1/broadcasts', { ...base, send: true, scheduled_at: at(30 * day - 60_000) }), 201);
    expect(await call('POST', '/v1/broadcasts', { ...base, send: true, scheduled_at: at(30 * day) }), 201);
    expect(
      await call('POST', '/v1/broadcasts', { ...base, send: true, scheduled_at: at(30 * day + 60_000) }),
      400,
      /^scheduled_at: must be within 30 days/,
    );
    expect(
      await call('POST', '/v1/broadcasts', { ...base, scheduled_at: at(day) }),
      400,
      /^scheduled_at: applies only with send: true/,
    );
    clock.advance(60_000);
  });

  it('emails: rescheduled at most 30 days ahead', async () => {
    const day = 24 * 3600 * 1000;
    const sent = await call('POST', '/v1/emails', {
      from: 'hello@shop.example',
      to: 'a@example.org',
      subject: 's',
      html: 'h',
      scheduled_at: new Date(clock.now() + day).toISOString(),
    });
    expect(sent, 200);
    const move = (ms: number) =>
      call('PATCH', `/v1/emails/${sent.body.id}`, { scheduled_at: new Date(clock.now() + ms).toISOString() });
    expect(await move(30 * day - 60_000), 200);
    expect(await move(30 * day), 200);
    expect(await move(30 * day + 60_000), 400, /^scheduled_at: must be within 30 days/);
  });

  it('cursors: ids of up to 320 characters', async () => {
    expect(await call('GET', `/v1/contacts?after=${'x'.repeat(319)}`), 200);
    expect(await call('GET', `/v1/contacts?after=${'x'.repeat(320)}`), 200);
    expect(await call('GET', `/v1/contacts?after=${'x'.repeat(321)}`), 400, /^after:/);
    expect(await call('GET', '/v1/contacts?after=a&before=b'), 400, /^before: cannot be combined with after/);
  });

  it('attachment download links work for an hour, not a moment more', async () => {
    const sent = await call('POST', '/v1/emails', {
      from: 'hello@shop.example',
      to: 'a@example.org',
      subject: 's',
      html: 'h',
      attachments: [{ filename: 'a.txt', content: Buffer.from('hello').toString('base64') }],
    });
    expect(sent, 200);
    const listed = await call('GET', `/v1/emails/${sent.body.id}/attachments`);
    expect(listed, 200);
    const [attachment] = listed.body.data as Array<{ download_url: string; expires_at: string; content_type: string }>;
    assert.equal(attachment!.content_type, 'text/plain');
    assert.equal(Date.parse(attachment!.expires_at), clock.now() + 3600_000);
    const path = new URL(attachment!.download_url).pathname;
    clock.advance(3600_000 - 1);
    assert.equal((await fetch(`${server.httpUrl}${path}`)).status, 200, 'just under the hour');
    clock.advance(1);
    const atHour = await fetch(`${server.httpUrl}${path}`);
    assert.equal(atHour.status, 200, 'at the hour');
    assert.equal(await atHour.text(), 'hello');
    clock.advance(1);
    assert.equal((await fetch(`${server.httpUrl}${path}`)).status, 404, 'just over the hour');
  });
});
