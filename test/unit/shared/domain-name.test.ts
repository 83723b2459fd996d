import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeDomain } from '../../../src/shared/domain-name.js';

describe('normalizeDomain', () => {
  it('lower-cases, trims a final dot and encodes IDNs', () => {
    assert.equal(normalizeDomain('Example.COM.'), 'example.com');
    assert.equal(normalizeDomain('mail.sub.example.co.uk'), 'mail.sub.example.co.uk');
    assert.equal(normalizeDomain('bücher.example'), 'xn--bcher-kva.example');
  });
  it('refuses what cannot be a public host name', () => {
    for (const bad of [
      '',
      'localhost',
      '192.0.2.1',
      'a..b',
      '-a.com',
      'a-.com',
      'a_b.com',
      'a b.com',
      'user@example.com',
      'example.com/x',
      'x'.repeat(64) + '.com',
      `${'a'.repeat(60)}.`.repeat(5) + 'com',
      'evil.com\r\nX: y',
    ]) {
      assert.equal(normalizeDomain(bad), null, bad);
    }
  });
});
