import assert from 'node:assert/strict';
import fc from 'fast-check';
import { z } from 'zod';
import type { Route } from '../../src/intake/http/route.js';
import { apiRoutes } from '../../src/intake/http/routes/index.js';
import { request, type ApiResponse } from './http.js';
import type { TestServer } from './server.js';

/**
 * A property over every API route of both surfaces: whatever the request (wrong types,
 * missing fields, huge strings, unicode edge cases, CRLF in every string, 10,000-deep
 * nesting, broken JSON, odd keys, odd path and query values), the answer is never a 5xx, a
 * 4xx comes in the surface's own envelope, every response carries the X-RateLimit-* headers
 * and no injected header, and the server still answers afterwards.
 *
 * Used by test/integration/api-fuzz.test.ts (a seeded, bounded run in `npm test`) and by
 * `npm run fuzz` (scripts/fuzz-api.ts: as many runs and seeds as asked).
 */

export interface Fixtures {
  live: string;
  test: string;
  master: string;
  workspaceId: string;
  /** Ids of real resources, so that routes with an :id also reach their handlers. */
  ids: string[];
}

export interface FuzzOptions {
  seed: number;
  numRuns: number;
  /** Called before each request, e.g. to move a manual clock past every rate-limit window. */
  beforeEach?: () => void;
}

const INJECTED = 'X-Injected';

/** Strings that have broken parsers, headers and databases before. */
const EDGE_STRINGS = [
  '',
  ' ',
  '\r\n',
  `a\r\n${INJECTED}: 1`,
  'ann@dest.test\r\nBcc: victim@elsewhere.test',
  `Subject\r\n\r\n<html>body</html>`,
  '\n.\n',
  '\u0000',
  'nul\u0000inside',
  '\ud800',
  'lone \udfff low',
  '\u202eevil\u202c',
  '\ufeffbom',
  '👩‍👩‍👧‍👦',
  'İstanbul ß ﬁ',
  'Ω≈ç√∫˜µ≤≥÷',
  '%00',
  '%ZZ',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '{{unsubscribe_url}}',
  '{{a.b.c.d}}',
  "' OR 1=1 --",
  'a@b',
  '@',
  'user@[127.0.0.1]',
  '"quoted"@dest.test',
  'name <ann@dest.test>',
  '=?utf-8?B?PXJuPQ==?=',
  'whsec_',
  'sk_live_',
  '9'.repeat(400),
  '-1',
  '1e309',
  '2026-02-30T25:61:61Z',
  'https://127.0.0.1/',
  'http://[::1]:1/x',
  'javascript:alert(1)',
];

const hugeString = fc
  .constantFrom(200, 10_000, 100_000)
  .chain((n) => fc.constantFrom('x', 'é', '\r\n', '👍').map((c) => c.repeat(n)));

export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...EDGE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...EDGE_STRINGS), fc.string({ maxLength: 10 })).map(([a, b]) => `${b}${a}${b}`),
  },
  { weight: 1, arbitrary: hugeString },
);

const nastyKey = fc.oneof(
  nastyString.filter((s) => s.length < 300),
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '', 'workspace_id'),
);

/** Any JSON value, with nasty strings and keys, a few levels deep. */
export const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nastyString,
    fc.integer(),
    fc.constantFrom(0, -1, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, -0, 0.1),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(nastyKey, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Values that pass a field's type, so that requests also get past validation into the services. */
function plausible(key: string, f: Fixtures): fc.Arbitrary<unknown> {
  const address = fc.constantFrom(
    'ann@dest.test',
    'Shop <shop@sender.test>',
    'shop@sender.test',
    'ÄÖ <x@dest.test>',
    'x@münchen.test',
  );
  const id = fc.constantFrom(...f.ids, '01890000-0000-7000-8000-000000000000');
  const table: Record<string, fc.Arbitrary<unknown>> = {
    from: address,
    from_email: address,
    to: fc.oneof(address, fc.array(address, { maxLength: 3 })),
    email: address,
    cc: fc.array(address, { maxLength: 2 }),
    bcc: fc.array(address, { maxLength: 2 }),
    reply_to: address,
    emails: fc.array(address, { maxLength: 3 }),
    subject: fc.constantFrom('Hello {{name}}', 'Ünïcödé', 'Re: x'),
    html: fc.constantFrom('<p>Hi {{name}} <a href="https://x.test">x</a></p>', '<img src="cid:logo">'),
    text: fc.constant('Hi'),
    name: fc.constant('fuzz'),
    from_name: fc.constant('Shop'),
    description: fc.constant('d'),
    first_name: fc.constant('Ann'),
    last_name: fc.constant('Lee'),
    detail: fc.constant('d'),
    url: fc.constantFrom('https://hooks.fuzz.test/x', 'https://127.0.0.1/x'),
    events: fc.constantFrom(['*'], ['email.sent', 'email.bounced']),
    secret: fc.constant(`whsec_${'a'.repeat(24)}`),
    domain: fc.constantFrom('fuzz.example', 'sender.test', 'xn--mnchen-3ya.test'),
    type: fc.constantFrom('marketing', 'transactional'),
    status: fc.constantFrom('enabled', 'disabled', 'unsubscribed', 'subscribed'),
    scope: fc.constantFrom('all', 'marketing'),
    reason: fc.constantFrom('manual', 'bounce', 'complaint'),
    template_id: id,
    templateId: id,
    audience_id: id,
    domain_id: id,
    subscriber_ids: fc.array(id, { maxLength: 2 }),
    tags: fc.constantFrom(['a', 'b'], [{ name: 'k', value: 'v' }]),
    metadata: fc.constant({ k: 'v' }),
    variables: fc.constant({ name: 'Ann' }),
    headers: fc.constant({ 'X-Ref': '1' }),
    scheduled_at: fc.constantFrom('2030-01-01T00:00:00Z', new Date(Date.now() + 3600_000).toISOString()),
    track_opens: fc.boolean(),
    track_clicks: fc.boolean(),
    external_id: fc.constant('ext-1'),
    attachments: fc.constant([{ filename: 'a.txt', content: 'aGk=', contentType: 'text/plain' }]),
    recipients: fc.constant([{ to: 'ann@dest.test', variables: { name: 'A' } }]),
  };
  return table[key] ?? anyJson;
}

/** Field names of a route's body schema (an object, or an array of objects). */
function fieldsOf(schema: z.ZodType | undefined): { array: boolean; keys: string[] } | null {
  if (schema instanceof z.ZodObject) return { array: false, keys: Object.keys(schema.shape) };
  if (schema instanceof z.ZodArray && schema.element instanceof z.ZodObject)
    return { array: true, keys: Object.keys(schema.element.shape) };
  return null;
}

function bodyFor(route: Route, f: Fixtures): fc.Arbitrary<unknown> {
  const fields = fieldsOf(route.body);
  if (!fields) return anyJson;
  const object = fc.record(
    Object.fromEntries(
      fields.keys.map((k) => [
        k,
        fc.oneof({ weight: 6, arbitrary: plausible(k, f) }, { weight: 1, arbitrary: anyJson }),
      ]),
    ),
    { requiredKeys: [] },
  );
  const shaped = fields.array ? fc.array(object, { maxLength: 3 }) : object;
  // Mostly close to the shape (to reach the services); sometimes any JSON at all.
  return fc.oneof({ weight: 4, arbitrary: shaped }, { weight: 1, arbitrary: anyJson });
}

/** Bodies no serialiser would produce: sent as raw text. */
const RAW_BODIES = [
  '['.repeat(10_000) + ']'.repeat(10_000),
  '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000),
  '{"metadata":' + '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_001),
  '{"to":',
  '{"to":"a@b"}{"to":"c@d"}',
  '\u0000',
  '{"a":"\\ud800"}',
  '{"__proto__":{"polluted":true},"to":"ann@dest.test"}',
  'null',
  '1e999999',
  '""',
  // Over the fuzz server's 1 MiB body limit: a 413.
  `{"html":"${'x'.repeat(1100 * 1024)}"}`,
];

interface FuzzRequest {
  method: string;
  path: string;
  key: string | undefined;
  headers: Record<string, string>;
  body: string | undefined;
}

const encodeSegment = (s: string): string => {
  if (s === '%ZZ' || s === '%00') return s; // sent raw: a malformed or NUL escape
  try {
    return encodeURIComponent(s);
  } catch {
    return encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '\ufffd'));
  }
};

function requestFor(route: Route, f: Fixtures): fc.Arbitrary<FuzzRequest> {
  const segment = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...f.ids) },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: nastyString.filter((s) => s.length < 2000) },
  );
  const params = (route.path.match(/:[a-z_A-Z]+/g) ?? []).length;
  const queryKeys = fc.constantFrom(
    'limit',
    'offset',
    'after',
    'before',
    'status',
    'to',
    'email',
    'tag',
    'external_id',
    'workspace_id',
    'x',
  );
  return fc
    .record({
      method: fc.oneof(
        { weight: 9, arbitrary: fc.constant(route.method) },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') },
      ),
      segments: fc.array(segment, { minLength: params, maxLength: params }),
      query: fc.dictionary(
        queryKeys,
        nastyString.filter((s) => s.length < 2000),
        { maxKeys: 3 },
      ),
      key: fc.oneof(
        { weight: 12, arbitrary: fc.constant(f.live) },
        { weight: 3, arbitrary: fc.constant(f.test) },
        { weight: 2, arbitrary: fc.constant(f.master) },
        { weight: 1, arbitrary: fc.constantFrom('sk_live_unknown', 'oat_unknown', `Bearer ${f.live}`, undefined) },
      ),
      // A master key needs it; for a workspace key a wrong one is a 403.
      workspace: fc.oneof(
        { weight: 8, arbitrary: fc.constant(undefined) },
        { weight: 2, arbitrary: fc.constant(f.workspaceId) },
        { weight: 1, arbitrary: fc.constantFrom('01890000-0000-7000-8000-000000000000', 'not-a-uuid', '') },
      ),
      idempotencyKey: fc.option(
        fc.oneof(
          fc.string({ minLength: 1, maxLength: 300, unit: 'grapheme-ascii' }),
          fc.constantFrom('k'.repeat(257), 'same-key'),
        ),
        { nil: undefined },
      ),
      body: fc.oneof(
        {
          weight: 8,
          arbitrary: bodyFor(route, f).map((b) => ({
            raw: undefined as string | undefined,
            value: b,
            type: 'application/json',
          })),
        },
        {
          weight: 2,
          arbitrary: fc.constantFrom(...RAW_BODIES).map((raw) => ({ raw, value: undefined, type: 'application/json' })),
        },
        {
          weight: 1,
          arbitrary: fc
            .constantFrom(
              'text/plain',
              'application/x-www-form-urlencoded',
              'application/json; charset=latin-9',
              'multipart/form-data',
            )
            .map((type) => ({ raw: 'a=b', value: undefined, type })),
        },
      ),
    })
    .map((r) => {
      let i = 0;
      const path = route.path.replace(/:[a-z_A-Z]+/g, () => encodeSegment(r.segments[i++]!));
      const query = new URLSearchParams(
        Object.entries(r.query).map(([k, v]): [string, string] => [k, v.replace(/[\ud800-\udfff]/g, '\ufffd')]),
      ).toString();
      const headers: Record<string, string> = {};
      if (r.workspace !== undefined) headers['X-Workspace-Id'] = r.workspace;
      if (r.idempotencyKey !== undefined) headers['Idempotency-Key'] = r.idempotencyKey;
      let body: string | undefined;
      if (r.method !== 'GET' && r.method !== 'OPTIONS') {
        body = r.body.raw ?? JSON.stringify(r.body.value);
        headers['content-type'] = r.body.type;
      }
      return { method: r.method, path: query ? `${path}?${query}` : path, key: r.key, headers, body };
    });
}

const send = (baseUrl: string, req: FuzzRequest): Promise<ApiResponse> =>
  request(baseUrl, req.method, req.path, {
    key: req.key,
    headers: req.headers,
    ...(req.body === undefined ? {} : { raw: req.body }),
  });

/** The invariants every response holds. */
function check(req: FuzzRequest, res: ApiResponse): void {
  const what = `${req.method} ${req.path.slice(0, 200)} (${(req.body ?? '').slice(0, 200)}) -> ${res.status} ${res.text.slice(0, 300)}`;
  assert.ok(res.status < 500, `no 5xx: ${what}`);
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    assert.match(res.headers.get(h) ?? '', /^\d+$/, `${h}: ${what}`);
  assert.equal(res.headers.get(INJECTED.toLowerCase()), null, `no injected header: ${what}`);
  assert.match(res.headers.get('x-request-id') ?? '', /^[A-Za-z0-9._:-]+$/, `request id: ${what}`);
  if (res.status >= 400) {
    if (req.path.startsWith('/api/')) {
      assert.equal(res.body?.success, false, `legacy envelope: ${what}`);
      assert.equal(typeof res.body.error, 'string', what);
      assert.match(res.body.code, /^[A-Z_]+$/, what);
    } else {
      assert.equal(typeof res.body?.request_id, 'string', `versioned envelope: ${what}`);
      assert.match(res.body.error?.code, /^[a-z_]+$/, what);
      assert.equal(typeof res.body.error.message, 'string', what);
      assert.equal(typeof res.body.error.retryable, 'boolean', what);
    }
  }
}

/** Creates the resources whose ids the requests use: a webhook, a template, a subscriber, an audience. */
export async function fuzzFixtures(server: TestServer): Promise<Fixtures> {
  const live = await server.key();
  const post = async (path: string, body: unknown) => {
    const res = await send(server.httpUrl, {
      method: 'POST',
      path,
      key: live,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.ok(res.status < 300, `${path}: ${res.text}`);
    return res.body;
  };
  const template = await post('/v1/templates', { name: 't', subject: 'Hello {{name}}', html: '<p>{{name}}</p>' });
  const subscriber = await post('/v1/subscribers', { email: 'sub@dest.test' });
  const audience = await post('/v1/audiences', { name: 'a' });
  const email = await post('/v1/emails', {
    from: 'shop@sender.test',
    to: 'ann@dest.test',
    subject: 's',
    html: '<p>x</p>',
  });
  return {
    live,
    test: await server.key({ test: true }),
    master: await server.key({ master: true }),
    workspaceId: server.workspaceId,
    ids: [template.id, subscriber.id, audience.id, email.id, 'sender.test', 'ann@dest.test'].filter(Boolean),
  };
}

/**
 * Runs the property; throws fast-check's report (with the seed and the shrunk request) on
 * failure. Returns how many responses had each status.
 */
export async function fuzzApi(
  server: TestServer,
  fixtures: Fixtures,
  options: FuzzOptions,
): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const anyRequest = fc.oneof(...apiRoutes.map((route) => requestFor(route, fixtures)));
  await fc.assert(
    fc.asyncProperty(anyRequest, async (req) => {
      options.beforeEach?.();
      const res = await send(server.httpUrl, req);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      check(req, res);
    }),
    { seed: options.seed, numRuns: options.numRuns, endOnFailure: true },
  );
  // Still serving, and still correct, after all of it.
  const health = await fetch(`${server.httpUrl}/healthz`);
  assert.equal(health.status, 200);
  const list = await send(server.httpUrl, {
    method: 'GET',
    path: '/v1/domains',
    key: fixtures.live,
    headers: {},
    body: undefined,
  });
  assert.equal(list.status, 200, list.text);
  return statuses;
}
