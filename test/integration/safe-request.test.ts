import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createResolver } from '../../src/shared/dns.js';
import { NetworkPolicyError } from '../../src/shared/network-policy.js';
import { RequestTimeoutError, safeRequest } from '../../src/shared/safe-request.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';

describe('safeRequest', () => {
  let server: Server;
  let base: string;
  let dns: TestDns;
  const seen: Array<{ method: string; url: string; body: string }> = [];

  before(async () => {
    dns = await startDnsServer();
    dns.set('app.example.test', 'A', ['127.0.0.1']);
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, body });
        const port = (server.address() as AddressInfo).port;
        if (req.url === '/big') return res.end('x'.repeat(100_000));
        if (req.url === '/hang') return; // never answers
        if (req.url === '/see-other') return res.writeHead(303, { location: '/final' }).end();
        if (req.url === '/temporary')
          return res.writeHead(307, { location: `http://app.example.test:${port}/final` }).end();
        if (req.url === '/loop') return res.writeHead(302, { location: '/loop' }).end();
        if (req.url === '/to-file') return res.writeHead(302, { location: 'file:///etc/passwd' }).end();
        if (req.url === '/to-creds')
          return res.writeHead(302, { location: `http://user:pw@127.0.0.1:${port}/final` }).end();
        res.end(`final ${req.method}`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await dns.close();
  });

  const policy = () => ({ allowPrivateNetworks: true, resolver: createResolver([dns.server]) });

  it('resolves names through the injected resolver', async () => {
    const port = new URL(base).port;
    const res = await safeRequest(`http://app.example.test:${port}/hello`, {
      policy: policy(),
      timeoutMs: 5000,
      maxResponseBytes: 1024,
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'final GET');
    assert.ok(dns.queries.includes('A app.example.test'));
  });

  it('keeps at most maxResponseBytes of the body and says it cut it', async () => {
    const res = await safeRequest(`${base}/big`, { policy: policy(), timeoutMs: 5000, maxResponseBytes: 1000 });
    assert.equal(res.body.length, 1000);
    assert.equal(res.truncated, true);
  });

  it('gives up after timeoutMs with a RequestTimeoutError', async () => {
    await assert.rejects(
      safeRequest(`${base}/hang`, { policy: policy(), timeoutMs: 200, maxResponseBytes: 10 }),
      RequestTimeoutError,
    );
  });

  it('returns a redirect as is by default, and follows it when asked (303 turns a POST into a GET)', async () => {
    const plain = await safeRequest(`${base}/see-other`, {
      policy: policy(),
      method: 'POST',
      body: 'x',
      timeoutMs: 5000,
      maxResponseBytes: 100,
    });
    assert.equal(plain.status, 303);
    const followed = await safeRequest(`${base}/see-other`, {
      policy: policy(),
      method: 'POST',
      body: 'x',
      timeoutMs: 5000,
      maxResponseBytes: 100,
      maxRedirects: 3,
    });
    assert.equal(followed.status, 200);
    assert.equal(followed.body.toString(), 'final GET');
    const kept = await safeRequest(`${base}/temporary`, {
      policy: policy(),
      method: 'POST',
      body: 'payload',
      timeoutMs: 5000,
      maxResponseBytes: 100,
      maxRedirects: 1,
    });
    assert.equal(kept.body.toString(), 'final POST');
    assert.equal(seen.at(-1)!.body, 'payload', '307 keeps the method and body');
    const loop = await safeRequest(`${base}/loop`, {
      policy: policy(),
      timeoutMs: 5000,
      maxResponseBytes: 100,
      maxRedirects: 2,
    });
    assert.equal(loop.status, 302, 'stops after maxRedirects');
  });

  it('checks every redirect hop against the policy', async () => {
    const before = seen.length;
    for (const path of ['/to-file', '/to-creds']) {
      await assert.rejects(
        safeRequest(`${base}${path}`, { policy: policy(), timeoutMs: 5000, maxResponseBytes: 10, maxRedirects: 3 }),
        NetworkPolicyError,
        path,
      );
    }
    assert.deepEqual(
      seen.slice(before).map((s) => s.url),
      ['/to-file', '/to-creds'],
      'the refused targets were never requested',
    );
  });

  it('under the production policy refuses loopback before sending anything', async () => {
    const strict = { allowPrivateNetworks: false, resolver: createResolver([dns.server]) };
    await assert.rejects(
      safeRequest(`https://app.example.test/x`, { policy: strict, timeoutMs: 5000, maxResponseBytes: 10 }),
      NetworkPolicyError,
    );
    const before = seen.length;
    await assert.rejects(
      safeRequest(`${base}/hello`, { policy: strict, timeoutMs: 5000, maxResponseBytes: 10 }),
      NetworkPolicyError,
    );
    assert.equal(seen.length, before, 'nothing was sent');
  });
});
