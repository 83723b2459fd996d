import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { decryptSecret, encryptSecret, safeEqual, sha256Hex } from '../../../src/shared/crypto.js';

describe('secrets at rest', () => {
  const key = randomBytes(32);
  it('round-trips and hides the plaintext', () => {
    const sealed = encryptSecret(key, '-----BEGIN PRIVATE KEY-----');
    assert.ok(!sealed.includes('PRIVATE'));
    assert.notEqual(encryptSecret(key, 'x'), encryptSecret(key, 'x'), 'fresh IV each time');
    assert.equal(decryptSecret(key, sealed), '-----BEGIN PRIVATE KEY-----');
  });
  it('refuses a tampered value or another key', () => {
    const sealed = encryptSecret(key, 'secret');
    const parts = sealed.split('.');
    parts[3] = Buffer.from('SECRET').toString('base64url');
    assert.throws(() => decryptSecret(key, parts.join('.')));
    assert.throws(() => decryptSecret(randomBytes(32), sealed));
    assert.throws(() => decryptSecret(key, 'garbage'));
  });
  it('compares in constant time and hashes keys', () => {
    assert.equal(safeEqual('abc', 'abc'), true);
    assert.equal(safeEqual('abc', 'abd'), false);
    assert.equal(safeEqual('abc', 'abcd'), false);
    assert.equal(sha256Hex('a'), 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb');
  });
});
