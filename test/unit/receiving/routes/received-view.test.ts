import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatMailbox } from '../../../../src/receiving/routes/parse-inbound.js';
import { headerObject } from '../../../../src/receiving/routes/received-view.js';
import { dmarcSaysReject, type AuthenticationResults } from '../../../../src/receiving/routes/authenticate-message.js';

describe('received message fields', () => {
  it('formats a mailbox, quoting names that need it and dropping control characters', () => {
    assert.equal(formatMailbox('Ann Sender', 'ann@x.test'), 'Ann Sender <ann@x.test>');
    assert.equal(formatMailbox('', 'ann@x.test'), 'ann@x.test');
    assert.equal(formatMailbox('Doe, John', 'j@x.test'), '"Doe, John" <j@x.test>');
    assert.equal(formatMailbox('Say "hi"', 'j@x.test'), '"Say \\"hi\\"" <j@x.test>');
    assert.equal(formatMailbox('Evil\r\nBcc: x@y.z', 'e@x.test'), '"Evil  Bcc: x@y.z" <e@x.test>');
  });

  it('headers as an object: lower-cased names, the first of a repeated header', () => {
    assert.deepEqual(
      headerObject([
        ['Received', 'from b'],
        ['Received', 'from a'],
        ['Subject', 'Hi'],
      ]),
      { received: 'from b', subject: 'Hi' },
    );
  });

  it('DMARC asks for rejection only when it failed under p=reject', () => {
    const auth = (result: string, policy: string | null): AuthenticationResults => ({
      spf: { result: 'none', domain: null },
      dkim: { result: 'none', signatures: [] },
      dmarc: { result, domain: 'x.test', policy },
      arc: null,
      header: '',
    });
    assert.equal(dmarcSaysReject(auth('fail', 'reject')), true);
    assert.equal(dmarcSaysReject(auth('fail', 'quarantine')), false);
    assert.equal(dmarcSaysReject(auth('pass', 'reject')), false);
    assert.equal(dmarcSaysReject(auth('temperror', 'reject')), false);
  });
});
