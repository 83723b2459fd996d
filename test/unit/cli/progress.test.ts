import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createProgress } from '../../../src/cli/progress.js';

/** A sink that records what was written, and a clock the test moves by hand. */
function setup(isTTY: boolean, total: number | null) {
  const writes: string[] = [];
  let t = 1_000_000;
  const progress = createProgress({
    label: 'suppressions import',
    total,
    unit: 'entries',
    sink: { write: (s) => writes.push(s), isTTY, columns: 100 },
    now: () => t,
  });
  return { writes, progress, advance: (ms: number) => (t += ms) };
}

describe('CLI progress, not a terminal', () => {
  it('writes a plain line at most every 2 seconds and one at the end', () => {
    const { writes, progress, advance } = setup(false, 10_000);
    advance(500);
    progress.update(500);
    for (let i = 0; i < 9; i++) {
      advance(500);
      progress.tick(500);
    }
    advance(1000);
    progress.update(10_000);
    progress.finish();
    progress.finish();
    progress.tick(5);
    assert.deepEqual(writes, [
      'suppressions import: 500 of 10,000 entries (5%), 1,000/s\n',
      'suppressions import: 2,500 of 10,000 entries (25%), 1,000/s\n',
      'suppressions import: 4,500 of 10,000 entries (45%), 1,000/s\n',
      'suppressions import: 10,000 of 10,000 entries (100%), 1,667/s, done in 6s\n',
    ]);
    for (const w of writes) assert.doesNotMatch(w, /[\r\x1b]/);
  });

  it('counts without a total, and says where failed work stopped', () => {
    const { writes, progress, advance } = setup(false, null);
    advance(2000);
    progress.tick(300);
    advance(1000);
    progress.tick(300);
    progress.fail();
    assert.deepEqual(writes, [
      'suppressions import: 300 entries, 150/s\n',
      'suppressions import: 600 entries, 200/s, stopped after 3s\n',
    ]);
  });
});

describe('CLI progress on a terminal', () => {
  it('redraws one line with a bar and the time left, then ends it with a newline', () => {
    const { writes, progress, advance } = setup(true, 1000);
    advance(1000);
    progress.tick(250);
    advance(50);
    progress.tick(10); // within 100 ms of the last redraw: skipped
    advance(1000);
    progress.update(1000);
    progress.finish();
    assert.equal(writes.length, 3);
    assert.ok(writes.every((w) => w.startsWith('\r\x1b[2Ksuppressions import [')));
    const first = /\[(#*)(-*)\] 250 of 1,000 entries \(25%\), 250\/s eta 3s$/.exec(writes[0]!);
    assert.ok(first, writes[0]);
    const width = first[1]!.length + first[2]!.length;
    assert.ok(width >= 10 && width <= 40, `bar width ${width}`);
    assert.equal(first[1]!.length, Math.floor(width / 4));
    assert.match(writes[2]!, /\[#+\] 1,000 of 1,000 entries \(100%\), 488\/s done in 2s\n$/);
  });
});
