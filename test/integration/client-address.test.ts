import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_LOGIN_FAILURES } from '../../src/services/dashboard-auth.js';
import { initConfig } from '../../src/cli/init.js';
import { DashboardClient, setCookieLine } from '../helpers/dashboard.js';
import { request } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The client address behind reverse proxies (issue 32, defect 1): X-Forwarded-For's leftmost
 * entries are written by the client; only what the trusted proxies appended counts. The test
 * server is reached on 127.0.0.1, which plays the proxy on the same host (what `mailsvc init`
 * sets up: Caddy in front of 127.0.0.1:3000).
 */

const PASSWORD = 'correct horse battery staple';
const REAL = '203.0.113.50';

/** Twelve wrong passwords, each with a new forged first entry: the lockout must hold at 5. */
async function forgedAttempts(server: TestServer, xff: (i: number) => string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) {
    const client = new DashboardClient(server.httpUrl);
    statuses.push((await client.signIn(`guess-${i}`, { 'x-forwarded-for': xff(i) })).status);
  }
  return statuses;
}

const lockedAfterFive = [
  ...Array<number>(MAX_LOGIN_FAILURES).fill(401),
  ...Array<number>(12 - MAX_LOGIN_FAILURES).fill(429),
];

describe('the client address behind the proxy `mailsvc init` sets up', () => {
  let server: TestServer;
  before(async () => {
    const written = initConfig({ host: 'mail.example.com', ips: [], standardPorts: false }) as {
      http: { trustProxy: unknown };
    };
    server = await startTestServer({
      dashboard: { password: PASSWORD },
      http: { trustProxy: written.http.trustProxy },
    });
  });
  after(() => server.close());

  it('locks the sign-in out at 5 failures although every attempt forges a different first X-Forwarded-For entry', async () => {
    assert.deepEqual(await forgedAttempts(server, (i) => `198.51.100.${i + 1}, ${REAL}`), lockedAfterFive);
    // The right password from the locked-out client is refused too; another client is not locked.
    const locked = await new DashboardClient(server.httpUrl).signIn(PASSWORD, {
      'x-forwarded-for': `10.9.9.9, ${REAL}`,
    });
    assert.equal(locked.status, 429);
    const other = await new DashboardClient(server.httpUrl).signIn(PASSWORD, {
      'x-forwarded-for': `${REAL}, 203.0.113.51`,
    });
    assert.equal(other.status, 303, 'the rightmost address is the client: 203.0.113.51 never failed');
  });

  it('throttles failed API keys per real client, not per forged entry', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const res = await request(server.httpUrl, 'GET', '/v1/domains', {
        key: `re_wrong_${i}`,
        headers: { 'x-forwarded-for': `192.0.2.${i + 1}, 203.0.113.60` },
      });
      statuses.push(res.status);
    }
    assert.deepEqual(statuses.slice(0, 20), Array<number>(20).fill(401));
    assert.deepEqual(statuses.slice(20), [429, 429], 'the 21st failure of one client within the minute is throttled');
  });
});

describe('the client address through two proxies', () => {
  for (const [name, trustProxy] of [
    ['a list of addresses and networks', ['127.0.0.1', '10.0.0.0/8']],
    ['a hop count', 2],
  ] as const) {
    it(`takes the rightmost address not a trusted proxy (${name})`, async () => {
      const server = await startTestServer({ dashboard: { password: PASSWORD }, http: { trustProxy } });
      try {
        // The client forged the first entry; the outer proxy appended the client; the inner proxy (10.20.30.40) appended the outer one.
        assert.deepEqual(
          await forgedAttempts(server, (i) => `198.51.100.${i + 1}, ${REAL}, 10.20.30.40`),
          lockedAfterFive,
        );
        const other = await new DashboardClient(server.httpUrl).signIn(PASSWORD, {
          'x-forwarded-for': `${REAL}, 203.0.113.77, 10.20.30.41`,
        });
        assert.equal(other.status, 303, 'another client behind the same proxies is not locked out');
      } finally {
        await server.close();
      }
    });
  }
});

describe('forwarded headers from a peer that is not a trusted proxy', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ dashboard: { password: PASSWORD }, http: { trustProxy: ['10.0.0.0/8'] } });
  });
  after(() => server.close());

  it('ignores X-Forwarded-For: the socket address is the client, whatever the header says', async () => {
    assert.deepEqual(await forgedAttempts(server, (i) => `198.51.100.${i + 1}, 10.0.0.${i + 1}`), lockedAfterFive);
  });

  it('ignores X-Forwarded-Proto: no Secure cookie over plain HTTP', async () => {
    const form = await new DashboardClient(server.httpUrl).get('/dashboard/login', { 'x-forwarded-proto': 'https' });
    const line = setCookieLine(form.headers, 'mailsvc_prelogin') ?? '';
    assert.ok(line, 'a pre-login cookie is set');
    assert.doesNotMatch(line, /; secure/i);
  });
});
