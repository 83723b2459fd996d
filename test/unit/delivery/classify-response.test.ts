import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { classifyError, classifyResponse, oneLine } from '../../../src/delivery/classify-response.js';
import { CATEGORIES } from '../../../src/delivery/response-rules.js';
import { repoPath } from '../../../scripts/repo-root.js';

const cases = readFileSync(repoPath('test/fixtures/smtp-responses.txt'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '' && !l.startsWith('#'))
  .map((line) => {
    const [action, category, bounceType, slow, ...reply] = line.split(' | ');
    return {
      line,
      action,
      category,
      bounceType: bounceType === '-' ? null : bounceType,
      slowDown: slow === 'slow',
      reply: reply.join(' | '),
    };
  });

describe('classifyResponse (the table in test/fixtures/smtp-responses.txt)', () => {
  it('has cases for every outcome', () => {
    assert.ok(cases.length >= 40);
    for (const c of cases)
      assert.ok((CATEGORIES as readonly string[]).includes(c.category!), `unknown category in: ${c.line}`);
  });
  for (const c of cases) {
    it(`${c.action} ${c.category}${c.bounceType ? ` (${c.bounceType})` : ''}${c.slowDown ? ' + slow down' : ''}: ${c.reply.slice(0, 70)}`, () => {
      const got = classifyResponse(c.reply);
      assert.deepEqual(
        { action: got.action, category: got.category, bounceType: got.bounceType, slowDown: got.slowDown },
        { action: c.action, category: c.category, bounceType: c.bounceType, slowDown: c.slowDown },
      );
    });
  }
  it('reads multi-line replies as one line', () => {
    assert.equal(
      oneLine('550-5.1.1 The email account\r\n550 5.1.1 does not exist'),
      '550-5.1.1 The email account 550 5.1.1 does not exist',
    );
    assert.equal(
      classifyResponse(
        '550-5.1.1 The email account that you tried to reach\r\n550-5.1.1 does not exist.\r\n550 5.1.1 https://support.google.com',
      ).category,
      'unknown_user',
    );
  });
  it('treats a reply without a code as a temporary protocol problem', () => {
    assert.deepEqual(classifyResponse('garbage'), {
      action: 'defer',
      category: 'protocol',
      bounceType: null,
      slowDown: false,
    });
  });
  it('classifies failures without a reply as deferrals by error code', () => {
    assert.equal(classifyError('ETIMEDOUT').category, 'timeout');
    assert.equal(classifyError('ETLS').category, 'tls');
    assert.equal(classifyError('EDNS').category, 'dns');
    assert.equal(classifyError('ECONNECTION').category, 'network');
    assert.equal(classifyError(undefined).action, 'defer');
  });
});
