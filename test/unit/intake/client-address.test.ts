import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { resolveClient } from '../../../src/intake/http/client-address.js';
import { schema } from '../../../src/config/schema.js';
import { repoPath } from '../../../scripts/repo-root.js';

describe('resolveClient: the rightmost address that is not a trusted proxy', () => {
  const cases: Array<[string, string, string | undefined, number | string[], string, boolean]> = [
    ['no proxy: the socket, whatever the header says', '203.0.113.9', '1.2.3.4', 0, '203.0.113.9', false],
    ['one hop: the entry the proxy appended', '127.0.0.1', '1.2.3.4, 203.0.113.9', 1, '203.0.113.9', true],
    ['two hops', '127.0.0.1', '1.2.3.4, 203.0.113.9, 10.0.0.2', 2, '203.0.113.9', true],
    ['more hops than entries: the leftmost there is', '127.0.0.1', '203.0.113.9', 3, '203.0.113.9', true],
    ['one hop, no header: the proxy itself', '127.0.0.1', undefined, 1, '127.0.0.1', true],
    [
      'a list: walks over trusted hops',
      '127.0.0.1',
      '1.2.3.4, 203.0.113.9, 10.1.2.3',
      ['127.0.0.1/32', '10.0.0.0/8'],
      '203.0.113.9',
      true,
    ],
    [
      'a list: the peer is not a proxy, the header is ignored',
      '198.51.100.1',
      '203.0.113.9',
      ['10.0.0.0/8'],
      '198.51.100.1',
      false,
    ],
    [
      'a list: every hop trusted, the leftmost',
      '127.0.0.1',
      '10.0.0.5',
      ['127.0.0.1/32', '10.0.0.0/8'],
      '10.0.0.5',
      true,
    ],
    [
      'IPv4-mapped socket address is the IPv4 one',
      '::ffff:127.0.0.1',
      '203.0.113.9',
      ['127.0.0.1/32'],
      '203.0.113.9',
      true,
    ],
    ['IPv6 proxy and client', '::1', '2001:db8::1', ['::1/128'], '2001:db8::1', true],
    [
      'an entry that is no address stops at the proxy that wrote it',
      '127.0.0.1',
      '203.0.113.9, garbage',
      2,
      '127.0.0.1',
      true,
    ],
    [
      'a client-written entry left of the client is never reached',
      '127.0.0.1',
      'garbage, 203.0.113.9',
      1,
      '203.0.113.9',
      true,
    ],
  ];
  for (const [name, peer, xff, trust, address, proxied] of cases) {
    it(name, () => assert.deepEqual(resolveClient(peer, xff, trust), { address, proxied }));
  }
});

describe('http.trustProxy', () => {
  const parse = (v: unknown, fromEnv = false) => schema.http.trustProxy.parse(v, fromEnv);
  it('takes a hop count from 0 to 16, true as 1 and false as 0', () => {
    assert.equal(parse(0), 0);
    assert.equal(parse(16), 16);
    assert.equal(parse(true), 1);
    assert.equal(parse(false), 0);
    assert.throws(() => parse(17), /hop count/);
    assert.throws(() => parse(-1), /hop count/);
    assert.throws(() => parse(1.5), /hop count/);
  });
  it('takes addresses and networks, as CIDR', () => {
    assert.deepEqual(parse(['127.0.0.1', '::1', '10.0.0.0/8']), ['127.0.0.1/32', '::1/128', '10.0.0.0/8']);
    assert.throws(() => parse(['127.0.0.1', 'proxy.example']), /"proxy.example"/);
    assert.throws(() => parse([]), /hop count/);
  });
  it('reads the environment: true/false, a count, a JSON array or a comma list', () => {
    assert.equal(parse('true', true), 1);
    assert.equal(parse('2', true), 2);
    assert.deepEqual(parse('["10.0.0.0/8"]', true), ['10.0.0.0/8']);
    assert.deepEqual(parse('127.0.0.1, 10.0.0.0/8', true), ['127.0.0.1/32', '10.0.0.0/8']);
  });
});

describe('one place for the client address', () => {
  it("no module but client-address.ts reads X-Forwarded-For or Koa's ctx.ip / ctx.ips", () => {
    const root = repoPath('src');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const offenders = files.filter(
      (f) =>
        !f.endsWith('client-address.ts') &&
        /\.get\(\s*['"]x-forwarded-for|\[\s*['"]x-forwarded-for['"]\s*\]|\bctx\.ips?\b|\brequest\.ips?\b/i.test(
          readFileSync(join(root, f), 'utf8'),
        ),
    );
    assert.deepEqual(offenders, []);
  });
});
