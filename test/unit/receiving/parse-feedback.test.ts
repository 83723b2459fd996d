import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressOf, parseFieldBlocks, readReport } from '../../../src/receiving/feedback/parse-feedback.js';

const part = (contentType: string, text: string) => ({
  contentType,
  content: Buffer.from(text.replace(/\n/g, '\r\n')),
});

describe('report parsing', () => {
  it('reads field blocks with folded lines; the first of a repeated field wins', () => {
    const blocks = parseFieldBlocks(
      'Reporting-MTA: dns; mx.example\n\nFinal-Recipient: rfc822; a@x.example\nDiagnostic-Code: smtp; 550 no\n  such user\nAction: failed\nAction: delayed\n\n\n',
    );
    assert.equal(blocks.length, 2);
    assert.equal(blocks[0]!.get('reporting-mta'), 'dns; mx.example');
    assert.equal(blocks[1]!.get('diagnostic-code'), 'smtp; 550 no such user');
    assert.equal(blocks[1]!.get('action'), 'failed');
  });

  it('addresses: typed, bracketed or bare; anything else is null', () => {
    assert.equal(addressOf('rfc822; a@x.example'), 'a@x.example');
    assert.equal(addressOf('<b@y.example>'), 'b@y.example');
    assert.equal(addressOf('Someone <c@z.example>'), null);
    assert.equal(addressOf(undefined), null);
  });

  it('a DSN: one entry per recipient, with action, status, reply and remote MTA', () => {
    const report = readReport('delivery-status', [
      part(
        'message/delivery-status',
        'Reporting-MTA: dns; mx.dest.test\n\nFinal-Recipient: rfc822; gone@dest.test\nAction: failed\nStatus: 5.1.1 (bad mailbox)\nRemote-MTA: dns; store.dest.test\nDiagnostic-Code: smtp; 550 5.1.1 unknown\n\nOriginal-Recipient: rfc822; slow@dest.test\nAction: delayed\nStatus: 4.4.1\n',
      ),
      part('text/rfc822-headers', 'Message-ID: <m1@shop.example>\nSubject: Hi\n'),
    ]);
    assert.equal(report?.kind, 'dsn');
    assert.deepEqual(report.kind === 'dsn' && report.recipients, [
      {
        recipient: 'gone@dest.test',
        action: 'failed',
        status: '5.1.1',
        diagnostic: '550 5.1.1 unknown',
        remoteMta: 'store.dest.test',
      },
      { recipient: 'slow@dest.test', action: 'delayed', status: '4.4.1', diagnostic: null, remoteMta: null },
    ]);
    assert.equal(report.original.get('message-id'), '<m1@shop.example>');
  });

  it('an ARF report: feedback type, agent, original envelope and headers', () => {
    const report = readReport('feedback-report', [
      part(
        'message/feedback-report',
        'Feedback-Type: Abuse\nUser-Agent: FBL/2\nVersion: 1\nOriginal-Mail-From: <b-1@bounces.shop.example>\nOriginal-Rcpt-To: <u@dest.test>\n',
      ),
      part('message/rfc822', 'From: a@shop.example\nMessage-ID: <m2@shop.example>\n\nbody\nNot-A-Header: x\n'),
    ]);
    assert.deepEqual(report && { ...report, original: Object.fromEntries(report.original) }, {
      kind: 'arf',
      feedbackType: 'abuse',
      userAgent: 'FBL/2',
      originalMailFrom: 'b-1@bounces.shop.example',
      originalRcptTo: 'u@dest.test',
      original: { from: 'a@shop.example', 'message-id': '<m2@shop.example>' },
    });
  });

  it('anything else is not a report', () => {
    assert.equal(readReport(undefined, []), null);
    assert.equal(readReport('delivery-status', [part('text/plain', 'hello')]), null);
    assert.equal(
      readReport('delivery-status', [part('message/delivery-status', 'Reporting-MTA: dns; x\n')]),
      null,
      'no recipients',
    );
    assert.equal(
      readReport('feedback-report', [part('message/feedback-report', 'Version: 1\n')]),
      null,
      'no feedback type',
    );
    assert.equal(
      readReport('disposition-notification', [part('message/disposition-notification', 'Disposition: displayed\n')]),
      null,
    );
  });
});
