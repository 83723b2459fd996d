import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';

describe('sending domains', () => {
  let server: TestServer;
  let dns: TestDns;
  let key: string;
  // Each test starts in a fresh rate-limit window (10 domain writes a minute).
  const clock = manualClock();
  beforeEach(() => clock.advance(60_000));
  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer(
      { delivery: { dnsServers: [dns.server] }, dkim: { host: 'dkim.mailsvc.test' } },
      { clock },
    );
    key = await server.key();
  });
  after(async () => {
    await server.close();
    await dns.close();
  });

  /** Publishes what `mailsvc domains dns` tells the customer and the operator to publish. */
  async function publish(domain: string, options: { skipTxt?: boolean; wrongKey?: boolean } = {}) {
    const records = await server.runtime.services.domains.recordsToPublish(server.workspaceId, domain);
    for (const r of records.customer) dns.set(r.name, 'CNAME', [r.value]);
    if (!options.skipTxt) {
      for (const r of records.dkimHost)
        dns.set(r.name, 'TXT', [options.wrongKey ? r.value.replace(/p=.{8}/, 'p=AAAAAAAA') : r.value]);
    }
    return records;
  }

  it('POST /api/v1/domains returns 201 with the SPEC shape', async () => {
    const res = await request(server.httpUrl, 'POST', '/api/v1/domains', {
      key,
      body: { domain: 'Example.COM', external_id: 'client-7', metadata: { plan: 'gold' } },
    });
    assert.equal(res.status, 201, show(res));
    assert.equal(res.body.success, true);
    const d = res.body.domain;
    assert.match(d.id, /^[0-9a-f-]{36}$/);
    assert.equal(d.domain_name, 'example.com');
    assert.equal(d.status, 'pending');
    assert.equal(d.external_id, 'client-7');
    assert.deepEqual(d.metadata, { plan: 'gold' });
    assert.ok(!Number.isNaN(Date.parse(d.created_at)));
    assert.equal(d.dkim_tokens.length, 3);
    assert.equal(new Set(d.dkim_tokens).size, 3);
    assert.deepEqual(
      d.dns_records,
      d.dkim_tokens.map((t: string) => ({
        type: 'CNAME',
        name: `${t}._domainkey.example.com`,
        value: `${t}.dkim.mailsvc.test`,
      })),
    );
  });

  it('refuses a domain that exists with 409 and a bad name with 400, in each envelope', async () => {
    const dup = await request(server.httpUrl, 'POST', '/api/v1/domains', { key, body: { domain: 'example.com' } });
    assert.equal(dup.status, 409, show(dup));
    assert.equal(dup.body.code, 'ALREADY_EXISTS');
    const dupV1 = await request(server.httpUrl, 'POST', '/v1/domains', { key, body: { domain: 'example.com' } });
    assert.equal(dupV1.status, 409);
    assert.equal(dupV1.body.error.code, 'already_exists');
    for (const domain of [
      'localhost',
      '192.168.1.1',
      'a..b',
      'bad_domain.com',
      'x'.repeat(64) + '.com',
      'evil.com\r\nX: y',
    ]) {
      const res = await request(server.httpUrl, 'POST', '/api/v1/domains', { key, body: { domain } });
      assert.equal(res.status, 400, `${domain}: ${show(res)}`);
      assert.equal(res.body.code, 'VALIDATION_ERROR');
      assert.match(res.body.error, /^domain:/);
    }
    const missing = await request(server.httpUrl, 'POST', '/v1/domains', { key, body: {} });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.message, 'domain: is required');
  });

  it('stays pending without DNS records and reports why', async () => {
    const res = await request(server.httpUrl, 'POST', '/v1/domains', { key, body: { domain: 'nodns.example' } });
    assert.equal(res.status, 201, show(res));
    const verify = await request(server.httpUrl, 'POST', `/v1/domains/${res.body.id}/verify`, { key });
    assert.equal(verify.status, 200, show(verify));
    assert.equal(verify.body.status, 'pending');
    assert.equal(verify.body.checks.dkim.status, 'not_published');
    assert.equal(verify.body.checks.dkim.records.length, 3);
    assert.ok(
      verify.body.checks.dkim.records.every((c: { ok: boolean; error: string }) => !c.ok && /no CNAME/.test(c.error)),
    );
    assert.equal(verify.body.checks.dkim.publish.length, 3, 'the CNAMEs to publish');
    assert.ok(
      dns.queries.some((q) => q.startsWith('CNAME ') && q.endsWith('._domainkey.nodns.example')),
      'asked our DNS server',
    );
  });

  it('stays pending when the key under dkim.host is missing or does not match', async () => {
    const res = await request(server.httpUrl, 'POST', '/v1/domains', { key, body: { domain: 'halfway.example' } });
    await publish('halfway.example', { skipTxt: true });
    const noTxt = await server.runtime.services.domains.verify(server.workspaceId, 'halfway.example');
    assert.equal(noTxt.domain.status, 'pending');
    assert.match(noTxt.checks[0]!.error!, /no DKIM key published/);
    await publish('halfway.example', { wrongKey: true });
    const wrong = await server.runtime.services.domains.verify(server.workspaceId, res.body.id);
    assert.equal(wrong.domain.status, 'pending');
    assert.match(wrong.checks[0]!.error!, /does not match/);
  });

  it('becomes verified when every CNAME resolves to the published key', async () => {
    const records = await publish('example.com');
    assert.equal(records.dkimHost.length, 3);
    assert.match(records.dkimHost[0]!.value, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    const verify = await request(server.httpUrl, 'POST', `/v1/domains/example.com/verify`, { key });
    assert.equal(verify.status, 200, show(verify));
    assert.equal(verify.body.status, 'verified', show(verify));
    assert.ok(verify.body.verified_at);
    const list = await request(server.httpUrl, 'GET', '/api/v1/domains', { key });
    assert.equal(
      list.body.domains.find((d: { domain_name: string }) => d.domain_name === 'example.com').status,
      'verified',
    );
  });

  it('re-checks pending domains in the background job', async () => {
    await request(server.httpUrl, 'POST', '/v1/domains', { key, body: { domain: 'later.example' } });
    await publish('later.example');
    const verified = await server.runtime.services.domains.recheckPending(0);
    assert.ok(verified >= 1);
    const one = await request(server.httpUrl, 'GET', '/v1/domains/later.example', { key });
    assert.equal(one.body.status, 'verified', show(one));
  });

  it('reads and deletes one domain; unknown ids are 404', async () => {
    const created = await request(server.httpUrl, 'POST', '/v1/domains', { key, body: { domain: 'gone.example' } });
    const del = await request(server.httpUrl, 'DELETE', `/v1/domains/${created.body.id}`, { key });
    assert.equal(del.status, 200, show(del));
    assert.deepEqual(del.body, { object: 'domain', id: created.body.id, deleted: true });
    const again = await request(server.httpUrl, 'GET', `/v1/domains/${created.body.id}`, { key });
    assert.equal(again.status, 404);
    assert.equal(again.body.error.code, 'not_found');
  });

  it('rate-limits POST /api/v1/domains at 10 per minute with Retry-After', async () => {
    // A clock standing at the start of a minute: all eleven requests fall in one window.
    const clock = manualClock(Math.floor(Date.now() / 60_000) * 60_000 + 1000);
    const fresh = await startTestServer({}, { clock });
    try {
      const k = await fresh.key();
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 11; i++) {
        last = await request(fresh.httpUrl, 'POST', '/api/v1/domains', { key: k, body: { domain: `d${i}.example` } });
        statuses.push(last.status);
        assert.equal(last.headers.get('x-ratelimit-limit'), '10');
        assert.equal(last.headers.get('x-ratelimit-remaining'), String(Math.max(0, 9 - i)));
        assert.equal(Number(last.headers.get('x-ratelimit-reset')), (clock.now() - 1000) / 1000 + 60);
      }
      assert.deepEqual(statuses, [...Array(10).fill(201), 429]);
      assert.ok(last);
      assert.equal(last.body.code, 'RATE_LIMITED');
      assert.equal(typeof last.body.message, 'string');
      assert.equal(typeof last.body.error, 'string');
      const retryAfter = Number(last.headers.get('retry-after'));
      assert.equal(retryAfter, 59);
      const v1 = await request(fresh.httpUrl, 'POST', '/v1/domains', { key: k, body: { domain: 'v1.example' } });
      assert.equal(v1.status, 429);
      assert.equal(v1.body.error.code, 'rate_limited');
      assert.equal(v1.body.error.retryable, true);
      clock.advance(60_000);
      const nextWindow = await request(fresh.httpUrl, 'POST', '/v1/domains', {
        key: k,
        body: { domain: 'v1.example' },
      });
      assert.equal(nextWindow.status, 201, 'the next window admits requests again');
    } finally {
      await fresh.close();
    }
  });
});
