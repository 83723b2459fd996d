import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { offsetList } from '../../../src/intake/http/pagination.js';
import { MAX_OFFSET, parsePage } from '../../../src/store/infra/list-page.js';

describe('offset pagination', () => {
  it('falls back to 20 for a limit outside 1..100 rather than clamping', () => {
    assert.deepEqual(parsePage({}), { limit: 20, offset: 0 });
    assert.deepEqual(parsePage({ limit: '100', offset: '40' }), { limit: 100, offset: 40 });
    assert.deepEqual(parsePage({ limit: '1' }), { limit: 1, offset: 0 });
    for (const limit of ['0', '101', '-5', 'abc', '2.5', '']) assert.equal(parsePage({ limit }).limit, 20, limit);
    assert.equal(parsePage({ offset: '-1' }).offset, 0);
    assert.equal(parsePage({ limit: ['5', '6'] }).limit, 20);
  });
  it('caps a huge offset at 2^31 - 1 (an empty page) instead of handing the database 1e400', () => {
    assert.equal(parsePage({ offset: String(MAX_OFFSET) }).offset, MAX_OFFSET);
    assert.equal(parsePage({ offset: '9'.repeat(400) }).offset, MAX_OFFSET);
    assert.equal(parsePage({ offset: String(2 ** 63) }).offset, MAX_OFFSET);
  });
  it('tells whether more follow', () => {
    assert.deepEqual(offsetList('items', [1, 2], 5, { limit: 2, offset: 0 }, true), {
      items: [1, 2],
      pagination: { total: 5, limit: 2, offset: 0, has_more: true },
      object: 'list',
      has_more: true,
      data: [1, 2],
    });
    assert.equal(offsetList('items', [5], 5, { limit: 2, offset: 4 }, false).pagination.has_more, false);
  });
  it("takes the Resend SDK's cursors, one at a time", () => {
    assert.deepEqual(parsePage({ limit: '5', after: 'abc' }), { limit: 5, offset: 0, after: 'abc' });
    assert.deepEqual(parsePage({ before: 'xyz' }), { limit: 20, offset: 0, before: 'xyz' });
    assert.throws(() => parsePage({ after: 'a', before: 'b' }), /before: cannot be combined with after/);
    assert.throws(() => parsePage({ after: 'x'.repeat(321) }), /after:/);
    assert.equal(parsePage({ after: 'x'.repeat(320) }).after, 'x'.repeat(320));
  });
  it('refuses a cursor with control characters (PostgreSQL refuses NUL in text: it was a 500)', () => {
    assert.throws(() => parsePage({ before: 'nul\u0000inside' }), /before: must be the id/);
    assert.throws(() => parsePage({ after: 'line\nbreak' }), /after: must be the id/);
    assert.equal(parsePage({ after: 'someone@example.com' }).after, 'someone@example.com');
  });
});
