import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as rawRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import nodemailer from 'nodemailer';
import { eventually } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show, type ApiResponse } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

function assertVersioned(res: ApiResponse, status: number, code: string) {
  assert.equal(res.status, status, show(res));
  assert.equal(res.body.error.code, code, show(res));
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(typeof res.body.error.retryable, 'boolean');
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
}
function assertLegacy(res: ApiResponse, status: number, code: string) {
  assert.equal(res.status, status, show(res));
  assert.deepEqual(Object.keys(res.body).sort(), ['code', 'error', 'success']);
  assert.equal(res.body.success, false);
  assert.equal(res.body.code, code);
}

describe('HTTP errors in the surface envelope', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer({ http: { bodyLimit: 4096 } });
    key = await server.key();
  });
  after(() => server.close());

  it('answers unknown routes with 404 in each envelope, with rate-limit headers', async () => {
    const a = await request(server.httpUrl, 'GET', '/v1/nothing-here', { key });
    assertVersioned(a, 404, 'not_found');
    assert.ok(a.headers.get('x-ratelimit-limit'));
    const b = await request(server.httpUrl, 'GET', '/api/v1/nothing-here', { key });
    assertLegacy(b, 404, 'NOT_FOUND');
    assert.ok(b.headers.get('x-ratelimit-remaining'));
    const c = await request(server.httpUrl, 'GET', '/elsewhere');
    assertVersioned(c, 404, 'not_found');
  });

  it('carries X-RateLimit-* on every status of both surfaces: 400, 401, 403, 404, 405, 409, 413, 415', async () => {
    const other = await server.runtime.services.workspaces.create('someone else');
    const json = { 'content-type': 'application/json' };
    const cases: Array<[number, string, string, Parameters<typeof request>[3]]> = [];
    for (const prefix of ['/v1', '/api/v1']) {
      cases.push(
        [400, 'POST', `${prefix}/domains`, { key, raw: '{"domain":', headers: json }],
        [400, 'POST', prefix === '/v1' ? '/v1/emails' : '/api/v1/send', { key, body: { subject: 'no recipient' } }],
        [401, 'GET', `${prefix}/domains`, {}],
        [401, 'GET', `${prefix}/domains`, { key: 'sk_live_wrong' }],
        [403, 'GET', `${prefix}/domains`, { key, headers: { 'X-Workspace-Id': other.id } }],
        [404, 'GET', `${prefix}/nothing-here`, { key }],
        [405, 'DELETE', `${prefix}/domains`, { key }],
        [409, 'POST', `${prefix}/domains`, { key, body: { domain: `taken${prefix.length}.example` } }],
        [413, 'POST', `${prefix}/domains`, { key, body: { domain: 'x.example', metadata: { pad: 'x'.repeat(5000) } } }],
        [
          415,
          'POST',
          `${prefix}/domains`,
          { key, raw: 'domain=x.example', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
        ],
      );
      await request(server.httpUrl, 'POST', `${prefix}/domains`, {
        key,
        body: { domain: `taken${prefix.length}.example` },
      });
    }
    for (const [status, method, path, options] of cases) {
      const res = await request(server.httpUrl, method, path, options);
      const what = `${method} ${path} -> ${show(res)}`;
      assert.equal(res.status, status, what);
      if (path.startsWith('/api/')) assert.equal(res.body.success, false, what);
      else assert.equal(typeof res.body.error.code, 'string', what);
      const limit = Number(res.headers.get('x-ratelimit-limit'));
      const remaining = Number(res.headers.get('x-ratelimit-remaining'));
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      assert.ok(limit > 0 && remaining >= 0 && remaining <= limit, `limit and remaining on ${what}`);
      assert.ok(reset >= Math.floor(Date.now() / 1000) - 1 && reset <= Date.now() / 1000 + 3600, `reset on ${what}`);
    }
  });

  it('a send refused before it counted shows the send bucket of its type', async () => {
    const transactional = await request(server.httpUrl, 'POST', '/api/v1/send', { key, body: { to: 'nope' } });
    assert.equal(transactional.status, 400);
    assert.equal(transactional.headers.get('x-ratelimit-limit'), '5', 'the starter transactional rate');
    const marketing = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { type: 'marketing', to: 'nope' },
    });
    assert.equal(marketing.status, 400);
    assert.equal(marketing.headers.get('x-ratelimit-limit'), '500', 'the starter marketing rate');
  });

  it('answers a known path with the wrong method with 405 and Allow', async () => {
    const res = await request(server.httpUrl, 'PUT', '/v1/domains', { key, body: {} });
    assertVersioned(res, 405, 'method_not_allowed');
    assert.match(res.headers.get('allow') ?? '', /GET/);
    assertLegacy(await request(server.httpUrl, 'DELETE', '/api/v1/domains', { key }), 405, 'METHOD_NOT_ALLOWED');
  });

  it('refuses malformed JSON with 400', async () => {
    const headers = { 'content-type': 'application/json' };
    for (const raw of ['{"domain":', '{"a":1}}', 'null', '"string"', '\u0000']) {
      assertVersioned(
        await request(server.httpUrl, 'POST', '/v1/domains', { key, raw, headers }),
        400,
        'validation_error',
      );
      assertLegacy(
        await request(server.httpUrl, 'POST', '/api/v1/domains', { key, raw, headers }),
        400,
        'VALIDATION_ERROR',
      );
    }
  });

  it('refuses bodies that are not JSON with 415', async () => {
    const raw = 'domain=example.com';
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    assertVersioned(
      await request(server.httpUrl, 'POST', '/v1/domains', { key, raw, headers }),
      415,
      'unsupported_media_type',
    );
    assertLegacy(
      await request(server.httpUrl, 'POST', '/api/v1/domains', { key, raw, headers }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
  });

  it('refuses bodies over http.bodyLimit with 413', async () => {
    const body = { domain: 'big.example', metadata: { pad: 'x'.repeat(5000) } };
    assertVersioned(await request(server.httpUrl, 'POST', '/v1/domains', { key, body }), 413, 'payload_too_large');
    assertLegacy(await request(server.httpUrl, 'POST', '/api/v1/domains', { key, body }), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('refuses wrong field types naming the field', async () => {
    const res = await request(server.httpUrl, 'POST', '/api/v1/domains', { key, body: { domain: 42 } });
    assertLegacy(res, 400, 'VALIDATION_ERROR');
    assert.equal(res.body.error, 'domain: must be a string');
    const meta = await request(server.httpUrl, 'POST', '/v1/domains', {
      key,
      body: { domain: 'm.example', metadata: [1] },
    });
    assertVersioned(meta, 400, 'validation_error');
    assert.match(meta.body.error.message, /^metadata:/);
  });

  it('keeps a client X-Request-Id and makes one otherwise', async () => {
    const mine = await request(server.httpUrl, 'GET', '/v1/domains', { key, headers: { 'x-request-id': 'trace-123' } });
    assert.equal(mine.headers.get('x-request-id'), 'trace-123');
    const bad = await request(server.httpUrl, 'GET', '/v1/domains', {
      key,
      headers: { 'x-request-id': 'has spaces and <tags>' },
    });
    assert.match(bad.headers.get('x-request-id') ?? '', /^req_/);
  });

  it('never answers 500 to garbage, and keeps serving', async () => {
    const paths = [
      '/v1/domains',
      '/api/v1/domains',
      '/v1/domains/%E0%A4%A',
      '/v1/domains/..%2f..%2fetc',
      '/api/v1/domains?workspace_id[]=x',
      '/v1/api-keys?limit=-1&offset=abc',
    ];
    const bodies: Array<string | Buffer> = [
      '{}',
      '[]',
      '{"domain":{"$gt":""}}',
      '{"domain":"' + 'a'.repeat(300) + '"}',
      randomBytes(64),
      '{"__proto__":{"x":1},"domain":"p.example"}',
    ];
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
        for (const raw of bodies) {
          const res = await request(
            server.httpUrl,
            method,
            path,
            method === 'GET' ? { key } : { key, raw, headers: { 'content-type': 'application/json' } },
          );
          assert.ok(res.status < 500, `${method} ${path}: ${show(res)}`);
          assert.ok(res.body !== undefined, `${method} ${path}: JSON body`);
        }
      }
    }
    // A request line Node itself cannot parse is answered by Node with 400, not by a crash.
    const status = await new Promise<number>((resolve) => {
      const req = rawRequest(
        server.httpUrl + '/v1/domains',
        { method: 'GET', headers: { authorization: `Bearer ${key}`, 'content-length': 'abc' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', () => resolve(400));
      req.end();
    });
    assert.ok(status === 400, `got ${status}`);
    const ok = await request(server.httpUrl, 'GET', '/v1/domains', { key });
    assert.equal(ok.status, 200);
  });

  it('reports liveness and readiness without authentication', async () => {
    const live = await request(server.httpUrl, 'GET', '/healthz');
    assert.equal(live.status, 200);
    assert.deepEqual(live.body, { status: 'ok' });
    const ready = await request(server.httpUrl, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.database, 'reachable');
  });
});

describe('large messages inside http.bodyMemory: API bodies and SMTP submissions', () => {
  const MB = 1024 * 1024;
  let server: TestServer;
  let dns: TestDns;
  let key: string;
  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({
      http: { bodyLimit: 4 * MB, bodyMemory: 3 * MB },
      smtp: { submission: { maxMessageSize: 4 * MB } },
      delivery: { dnsServers: [dns.server], enabled: false },
    });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'big.example');
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  /** A POST of `size` bytes whose body is sent in two halves, the second when `finish` is called; `answered` is its status. */
  const post = (size: number, sendAll = false) => {
    const head = '{"domain":"big.example","metadata":{"pad":"';
    const body = Buffer.from(head + 'x'.repeat(size - head.length - 3) + '"}}');
    assert.equal(body.length, size);
    const url = new URL(`${server.httpUrl}/v1/domains`);
    let done = false;
    const req = rawRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': size },
    });
    const answered = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        done = true;
        resolve(res.statusCode!);
      });
      req.on('error', reject);
    });
    req.write(body.subarray(0, MB));
    const finish = () => req.end(body.subarray(MB));
    if (sendAll) finish();
    return { answered, finish, done: () => done };
  };

  /** The gauges of http.bodyMemory: bytes held and bodies waiting. */
  const gauges = async () => {
    const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
    const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    return { held: read('mailsvc_http_body_memory_bytes'), waiting: read('mailsvc_http_bodies_waiting') };
  };

  it('at the budget large bodies run together; a byte over waits for room, small ones never wait, one over bodyLimit is refused at once', async () => {
    const a = post(1.5 * MB);
    await eventually(async () => (await gauges()).held === 1.5 * MB || undefined, 10_000, 'a holds its room');
    const b = post(1.5 * MB); // with a: exactly the budget
    await eventually(async () => (await gauges()).held === 3 * MB || undefined, 10_000, 'b holds its room beside a');
    const c = post(1.5 * MB + 1, true); // over it: waits though its whole body is sent
    await eventually(async () => (await gauges()).waiting === 1 || undefined, 10_000, 'c waits');
    // Small requests and a body over bodyLimit do not wait.
    assertVersioned(
      await request(server.httpUrl, 'POST', '/v1/domains', { key, body: { domain: 42 } }),
      400,
      'validation_error',
    );
    assert.equal(await post(4 * MB + 2, true).answered, 413);
    b.finish();
    assert.equal(await b.answered, 400, 'b ran beside a');
    assert.equal(c.done(), false);
    assert.deepEqual(await gauges(), { held: 1.5 * MB, waiting: 1 }, 'c waits while a holds its room');
    a.finish();
    assert.equal(await a.answered, 400);
    assert.equal(await c.answered, 400, 'c runs once a gave its room back');
    assert.deepEqual(await gauges(), { held: 0, waiting: 0 });
  });

  /** A message of exactly `size` bytes as the server counts them (CRLF lines), submitted by SMTP; resolves to the server's reply. */
  const submit = (size: number) => {
    const head = `From: shop@big.example\r\nTo: ann@example.org\r\nSubject: ${size} bytes\r\n\r\n`;
    // Whole lines, the last one padded: a message not ending in CRLF is given one by the client.
    const line = 'x'.repeat(998) + '\r\n';
    let body = line.repeat(Math.floor((size - head.length) / line.length) - 1);
    body += 'y'.repeat(size - head.length - body.length - 2) + '\r\n';
    const raw = head + body;
    assert.equal(Buffer.byteLength(raw), size);
    return nodemailer
      .createTransport({
        host: '127.0.0.1',
        port: server.smtp!.starttls,
        requireTLS: true,
        auth: { user: 'apikey', pass: key },
        tls: { rejectUnauthorized: false },
      })
      .sendMail({ envelope: { from: 'shop@big.example', to: ['ann@example.org'] }, raw })
      .then((info) => info.response);
  };

  it("an SMTP submission of 1 MB and over waits, once read, for the room that the API's large bodies hold; a byte under 1 MB never waits", async () => {
    const a = post(3 * MB); // the whole budget
    await eventually(async () => (await gauges()).held === 3 * MB || undefined, 10_000, 'a holds the budget');
    let answered = false;
    const large = submit(MB).then((reply) => ((answered = true), reply));
    await eventually(async () => (await gauges()).waiting === 1 || undefined, 10_000, 'the 1 MB submission waits');
    assert.match(await submit(MB - 1), /^250 /, 'a byte under 1 MB is queued while the budget is full');
    assert.equal(answered, false);
    a.finish();
    assert.equal(await a.answered, 400);
    assert.match(await large, /^250 .*queued as/);
    assert.deepEqual(await gauges(), { held: 0, waiting: 0 });
  });
});
