import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { orderMxHosts } from '../../../src/delivery/resolve-route.js';
import { bounceDomainOf, parseReturnPath, returnPathFor } from '../../../src/delivery/return-path.js';
import { simulate } from '../../../src/delivery/simulator.js';

describe('MX order (RFC 5321 §5.1)', () => {
  it('sorts by preference and shuffles equal preferences', () => {
    const hosts = [
      { name: 'c', priority: 20 },
      { name: 'a1', priority: 10 },
      { name: 'a2', priority: 10 },
      { name: 'b', priority: 5 },
    ];
    const seq = (values: number[]) => () => values.shift()!;
    assert.deepEqual(
      orderMxHosts(hosts, seq([0.1, 0.2, 0.9, 0.5])).map((h) => h.name),
      ['b', 'a1', 'a2', 'c'],
    );
    assert.deepEqual(
      orderMxHosts(hosts, seq([0.1, 0.9, 0.2, 0.5])).map((h) => h.name),
      ['b', 'a2', 'a1', 'c'],
    );
  });
});

describe('VERP return path', () => {
  const key = Buffer.alloc(32, 7);
  const id = '01890a5d-ac96-774b-bcce-b302099a8057';
  it('names the email on the bounce domain and parses back', () => {
    const address = returnPathFor(id, bounceDomainOf('example.com', 'bounces'), key);
    assert.match(address, /^b-01890a5dac96774bbcceb302099a8057-[0-9a-f]{10}@bounces\.example\.com$/);
    assert.ok(address.split('@')[0]!.length <= 64, 'a local part fits RFC 5321');
    assert.equal(parseReturnPath(address, key), id);
    assert.equal(parseReturnPath(address.toUpperCase(), key), id, 'case changes by relays do not matter');
    assert.equal(bounceDomainOf('example.com', ''), 'example.com');
  });
  it('refuses forged or foreign addresses', () => {
    const address = returnPathFor(id, 'bounces.example.com', key);
    assert.equal(parseReturnPath(address, Buffer.alloc(32, 8)), null, 'another instance key');
    assert.equal(parseReturnPath(address.replace(/-[0-9a-f]{10}@/, '-0000000000@'), key), null, 'a wrong tag');
    assert.equal(parseReturnPath('postmaster@example.com', key), null);
  });
});

describe('simulator', () => {
  it('answers by local part, ignoring +labels', () => {
    assert.equal(simulate('delivered@simulator.mailsvc.dev', 0, 0).kind, 'delivered');
    assert.equal(simulate('anyone@example.com', 0, 0).kind, 'delivered');
    const bounced = simulate('Bounced+abc@simulator.mailsvc.dev', 0, 0);
    assert.equal(bounced.kind, 'bounced');
    assert.equal(bounced.kind === 'bounced' && bounced.bounceType, 'hard');
    const complained = simulate('complained@simulator.mailsvc.dev', 0, 0);
    assert.equal(complained.kind === 'delivered' && complained.complained, true);
    assert.equal(simulate('delayed@simulator.mailsvc.dev', 0, 0).kind, 'deferred');
    assert.equal(simulate('delayed@simulator.mailsvc.dev', 1, 0).kind, 'delivered');
    assert.equal(simulate('suppressed@simulator.mailsvc.dev', 0, 0).kind, 'suppressed');
  });
});
