import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { subjectKey } from '../../../../src/receiving/routes/file-in-thread.js';
import { ftsQuery } from '../../../../src/store/inboxes.js';

describe('threading by subject, when a message has no threading headers', () => {
  it('compares subjects without reply and forward prefixes, case or spacing', () => {
    const same = [
      'Order 42 is broken',
      'Re: Order 42 is broken',
      'RE: re: order 42  is broken',
      'Fwd: Re: Order 42 is broken',
      'AW: Order 42 is broken',
      'Re[2]: Order 42 is broken',
      ' SV:Order 42 is broken ',
    ];
    for (const s of same) assert.equal(subjectKey(s), 'order 42 is broken', s);
    assert.equal(subjectKey('Recipe: soup'), 'recipe: soup', 'a word starting with a prefix is not one');
    assert.equal(subjectKey('Re:'), '');
    assert.equal(subjectKey(null), '');
  });
});

describe('the FTS5 expression of a search query', () => {
  it('makes every word a quoted string, all required, so that no query syntax is interpreted', () => {
    assert.equal(ftsQuery('refund  invoice'), '"refund" "invoice"');
    assert.equal(ftsQuery('a"b OR NEAR(c'), '"a""b" "OR" "NEAR(c"');
    assert.equal(ftsQuery('   '), '');
  });
});
