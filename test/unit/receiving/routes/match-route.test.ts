import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  matchRoute,
  parseRouteAddress,
  splitRecipient,
  type MatchableRoute,
} from '../../../../src/receiving/routes/match-route.js';

const route = (id: string, local_part: string, created_at = 1): MatchableRoute => ({
  id,
  local_part,
  created_at,
  kind: local_part === '*' ? 'catch_all' : local_part.includes('*') ? 'pattern' : 'address',
});

describe('route addresses', () => {
  it('parses an address, a pattern and a catch-all; lower-cases and normalises the domain', () => {
    assert.deepEqual(parseRouteAddress('Support@Example.COM'), {
      localPart: 'support',
      domain: 'example.com',
      kind: 'address',
    });
    assert.deepEqual(parseRouteAddress('reply+*@example.com'), {
      localPart: 'reply+*',
      domain: 'example.com',
      kind: 'pattern',
    });
    assert.deepEqual(parseRouteAddress('*@example.com'), { localPart: '*', domain: 'example.com', kind: 'catch_all' });
    assert.deepEqual(parseRouteAddress('x@bücher.example'), {
      localPart: 'x',
      domain: 'xn--bcher-kva.example',
      kind: 'address',
    });
  });

  it('refuses what is not a route address', () => {
    for (const bad of [
      '',
      'support',
      '@example.com',
      'a b@example.com',
      'a@localhost',
      'a@192.0.2.1',
      '"quoted"@example.com',
      'a..b@example.com',
      `${'x'.repeat(65)}@example.com`,
      'a@example.com\r\nBcc: x@y.z',
    ]) {
      assert.equal(parseRouteAddress(bad), null, JSON.stringify(bad));
    }
    assert.ok(parseRouteAddress(`${'x'.repeat(64)}@example.com`), '64 characters is the longest local part');
  });

  it('splits a recipient', () => {
    assert.deepEqual(splitRecipient('Ann.Smith@Example.com'), { localPart: 'ann.smith', domain: 'example.com' });
    assert.equal(splitRecipient('no-at-sign'), null);
  });
});

describe('matching a recipient to a route', () => {
  const routes = [
    route('c', '*'),
    route('p1', 'reply+*'),
    route('p2', 'reply+ticket-*'),
    route('a', 'support'),
    route('p3', '*-bounces'),
  ];

  it('prefers the address, then the longest pattern, then the catch-all', () => {
    assert.equal(matchRoute(routes, 'support')?.id, 'a');
    assert.equal(matchRoute(routes, 'SUPPORT')?.id, 'a', 'local parts compare without case');
    assert.equal(matchRoute(routes, 'reply+ticket-7')?.id, 'p2');
    assert.equal(matchRoute(routes, 'reply+abc')?.id, 'p1');
    assert.equal(matchRoute(routes, 'reply+')?.id, 'p1', '* matches an empty run');
    assert.equal(matchRoute(routes, 'list-bounces')?.id, 'p3');
    assert.equal(matchRoute(routes, 'anyone')?.id, 'c');
  });

  it('matches nothing without a covering route; pattern characters are literal except *', () => {
    const some = [route('a', 'support'), route('p', 'a.b+*')];
    assert.equal(matchRoute(some, 'supports'), null);
    assert.equal(matchRoute(some, 'axb+1'), null, 'the dot is not a regex wildcard');
    assert.equal(matchRoute(some, 'a.b+1')?.id, 'p');
    assert.equal(matchRoute([], 'x'), null);
  });

  it('breaks ties by age, then id', () => {
    assert.equal(
      matchRoute([route('new', 'x-*', 2), route('old', 'y-*', 1), route('old2', 'x-*', 1)], 'x-1')?.id,
      'old2',
    );
  });
});
