import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { suppressionKey } from '../../../src/services/suppressions.js';

describe('suppressionKey', () => {
  it('lower-cases addresses and turns domains into @domain', () => {
    assert.equal(suppressionKey(' Alice@Example.COM '), 'alice@example.com');
    assert.equal(suppressionKey('@Example.com'), '@example.com');
    assert.equal(suppressionKey('example.com'), '@example.com');
    assert.equal(suppressionKey('user@bücher.example'), 'user@xn--bcher-kva.example');
  });
  it('refuses what is neither, naming the field', () => {
    for (const bad of [
      '',
      'no spaces@example.com',
      'a@localhost',
      '@',
      'a@b@',
      'x\r\n@example.com',
      `${'a'.repeat(65)}@example.com`,
    ]) {
      assert.throws(
        () => suppressionKey(bad, 'email'),
        (err: Error) => err.message.startsWith('email: '),
        JSON.stringify(bad),
      );
    }
  });
});
