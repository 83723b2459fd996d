import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { threadCandidates } from '../../../../src/receiving/routes/threading.js';

describe('thread candidates', () => {
  it('In-Reply-To first, then References from the newest, without repeats', () => {
    assert.deepEqual(threadCandidates('<c@x>', ['<a@x>', '<b@x>', '<c@x>']), ['<c@x>', '<b@x>', '<a@x>']);
    assert.deepEqual(threadCandidates(null, ['<a@x>']), ['<a@x>']);
    assert.deepEqual(threadCandidates(null, []), []);
  });

  it('keeps the 20 newest references of a long thread', () => {
    const refs = Array.from({ length: 50 }, (_, i) => `<${i}@x>`);
    const candidates = threadCandidates('<r@x>', refs);
    assert.equal(candidates.length, 21);
    assert.equal(candidates[1], '<49@x>');
    assert.equal(candidates.at(-1), '<30@x>');
  });
});
