import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REDACTED, redactBody } from '../../../src/shared/redact-body.js';

describe('redactBody', () => {
  it('replaces secrets wherever they are, and attachment content by its size', () => {
    const body = {
      name: 'k',
      token: 're_live_abc',
      nested: { Secret: 'whsec_x', list: [{ password: 'p' }, { api_key: null }] },
      attachments: [{ filename: 'a.pdf', content: 'QUJD' }],
      content: 'not an attachment',
    };
    assert.deepEqual(JSON.parse(redactBody(body)!), {
      name: 'k',
      token: REDACTED,
      nested: { Secret: REDACTED, list: [{ password: REDACTED }, { api_key: null }] },
      attachments: [{ filename: 'a.pdf', content: '[4 characters of attachment content]' }],
      content: 'not an attachment',
    });
  });

  it('keeps a body at the size limit, and notes the size of one over it', () => {
    const at = { s: 'x'.repeat(100 - '{"s":""}'.length) };
    assert.equal(redactBody(at, 100), JSON.stringify(at));
    const over = { s: 'x'.repeat(101 - '{"s":""}'.length) };
    assert.deepEqual(JSON.parse(redactBody(over, 100)!), { truncated: true, characters: 101 });
  });

  it('describes bytes and streams instead of keeping them; no body is null', () => {
    assert.equal(redactBody(Buffer.from('abc')), '"[3 bytes]"');
    assert.equal(redactBody(undefined), null);
    assert.equal(redactBody(null), null);
    assert.equal(redactBody('plain'), '"plain"');
  });
});
