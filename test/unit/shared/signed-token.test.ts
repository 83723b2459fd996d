import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { signToken, tokenKey, verifyToken } from '../../../src/shared/signed-token.js';

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('signed tokens', () => {
  const key = tokenKey(randomBytes(32), 'test');

  it('gives back the payload of a genuine token, and nothing for another purpose', () => {
    const token = signToken(key, { e: 'id', n: 1 });
    assert.deepEqual(verifyToken(key, token), { e: 'id', n: 1 });
    assert.equal(verifyToken(tokenKey(randomBytes(32), 'other'), token), null);
  });

  it('refuses every other spelling of the last character, though some decode to the same MAC', () => {
    // 16 bytes of MAC are 22 characters, the last carrying 2 bits: 16 characters decode alike.
    for (let round = 0; round < 20; round++) {
      const token = signToken(key, { round });
      const last = token.at(-1)!;
      const accepted = [...BASE64URL].filter((c) => verifyToken(key, `${token.slice(0, -1)}${c}`) !== null);
      assert.deepEqual(accepted, [last]);
    }
  });

  it('refuses a token with anything added, removed or changed', () => {
    const token = signToken(key, { e: 'id' });
    const [body, mac] = token.split('.') as [string, string];
    for (const forged of [
      `${token}A`,
      `${token}=`,
      token.slice(0, -1),
      `${body}.${mac}.x`,
      `${body}x.${mac}`,
      `${body}.${mac.slice(0, 10)}*${mac.slice(11)}`,
      `.${mac}`,
      `${body}.`,
      '',
    ])
      assert.equal(verifyToken(key, forged), null, forged);
  });
});
