import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import {
  createDkimSigner,
  OVERSIGNED_HEADERS,
  SIGNED_HEADERS,
  type DkimSigner,
} from '../../../src/delivery/dkim-signer.js';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = {
  domain: 'shop.example',
  selector: 's1',
  privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
};
const record = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
// mailauth's verifier, with the key served by a resolver function: no network.
const verify = async (raw: Buffer) =>
  (
    await dkimVerify(raw, {
      resolver: async (name: string) =>
        name === 's1._domainkey.shop.example'
          ? [[record]]
          : Promise.reject(Object.assign(new Error('nx'), { code: 'ENOTFOUND' })),
    })
  ).results;

const message = Buffer.from(
  [
    'From: Shop <news@shop.example>',
    'To: ann@example.org',
    'Subject: Spring news',
    'Date: Mon, 23 Nov 2026 10:00:00 +0000',
    'Message-ID: <1@shop.example>',
    'List-Unsubscribe: <https://mail.shop.example/u/abc>',
    'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
    'X-Entity-Ref-ID: 42',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Hello',
    '',
  ].join('\r\n'),
);

/** The names in h=, lower-cased, in order. */
const signedNames = (raw: Buffer): string[] => {
  const head = raw
    .toString('latin1')
    .split('\r\n\r\n')[0]!
    .replace(/\r\n[ \t]+/g, ' ');
  return /^DKIM-Signature:.*?\bh=([^;]*);/im
    .exec(head)![1]!
    .split(':')
    .map((h) => h.trim().toLowerCase());
};
const count = (list: string[], name: string) => list.filter((n) => n === name).length;

for (const threads of [0, 1]) {
  describe(`DKIM signer (${threads === 0 ? 'inline' : 'worker thread'})`, () => {
    const signer: DkimSigner = createDkimSigner({ threads });
    after(() => signer.close());

    it('signs List-Unsubscribe-Post with List-Unsubscribe (RFC 8058 §4) and verifies', async () => {
      const signed = await signer.sign(message, key, Date.parse('2026-11-23T10:00:00Z'));
      const [result] = await verify(signed);
      assert.equal(result!.status.result, 'pass', JSON.stringify(result!.status));
      const names = signedNames(signed);
      for (const name of [
        'from',
        'to',
        'subject',
        'date',
        'message-id',
        'list-unsubscribe',
        'list-unsubscribe-post',
        'mime-version',
        'content-type',
      ]) {
        assert.ok(names.includes(name), `${name} in h=: ${names.join(':')}`);
      }
      assert.ok(!names.includes('x-entity-ref-id'), 'custom headers are not signed');
    });

    it('over-signs: each listed header is named once more than it occurs, absent ones once', async () => {
      const names = signedNames(await signer.sign(message, key, Date.now()));
      for (const name of ['from', 'to', 'subject', 'date', 'message-id', 'list-unsubscribe', 'list-unsubscribe-post'])
        assert.equal(count(names, name), 2, `${name}: ${names.join(':')}`);
      for (const name of ['cc', 'reply-to', 'sender', 'in-reply-to', 'references'])
        assert.equal(count(names, name), 1, `absent ${name} signed as absent`);
      assert.equal(count(names, 'list-help'), 0, 'headers signed only when present are not named when absent');
      assert.deepEqual(
        names.slice(-OVERSIGNED_HEADERS.length),
        OVERSIGNED_HEADERS.map((n) => n.toLowerCase()),
        'the extra names come last in h=',
      );
      assert.ok(OVERSIGNED_HEADERS.every((n) => (SIGNED_HEADERS as readonly string[]).includes(n)));
    });

    it('a header added after signing breaks the signature: From, Subject, List-Unsubscribe, Cc', async () => {
      const signed = await signer.sign(message, key, Date.now());
      const split = signed.indexOf('\r\n\r\n');
      for (const added of [
        'From: Mallory <m@evil.example>',
        'Subject: Pay now',
        'List-Unsubscribe: <https://evil.example/u>',
        'Cc: someone@evil.example',
      ]) {
        // Added on top (as a relay would prepend), and at the bottom of the header.
        for (const tampered of [
          Buffer.concat([Buffer.from(`${added}\r\n`), signed]),
          Buffer.concat([signed.subarray(0, split), Buffer.from(`\r\n${added}`), signed.subarray(split)]),
        ]) {
          const [result] = await verify(tampered);
          assert.notEqual(result!.status.result, 'pass', `${added} must break the signature`);
        }
      }
      const untouched = Buffer.concat([Buffer.from('Received: from relay.example by mx.example.org\r\n'), signed]);
      assert.equal((await verify(untouched))[0]!.status.result, 'pass', 'a trace header added in transit does not');
    });
  });
}
