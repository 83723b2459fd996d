import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judge, type GuardThresholds } from '../../../src/services/deliverability/reputation-rule.js';

const t: GuardThresholds = {
  windowHours: 24,
  minimumSent: 200,
  bounceWarning: 5,
  bouncePause: 10,
  complaintWarning: 0.1,
  complaintPause: 0.3,
  engagementWarning: 1,
};
const counts = (accepted: number, bounces: number, hard: number, complaints: number) => ({
  accepted,
  bounces,
  hard_bounces: hard,
  complaints,
});

describe('reputation guard: judge (thresholds at, just under and just over)', () => {
  const cases: Array<[string, ReturnType<typeof counts>, string]> = [
    ['below the minimum volume, however bad', counts(100, 99, 99, 10), 'sending'],
    ['at the minimum volume, clean', counts(200, 0, 0, 0), 'sending'],
    ['hard bounces at 5% exactly: not over', counts(190, 10, 10, 0), 'sending'],
    ['hard bounces just over 5%', counts(1894, 106, 106, 0), 'warning'],
    ['hard bounces at 10% exactly: warning, not paused', counts(180, 20, 20, 0), 'warning'],
    ['hard bounces just over 10%', counts(1789, 211, 211, 0), 'paused'],
    ['soft bounces do not count', counts(100, 100, 0, 0), 'sending'],
    ['complaints at 0.1% exactly', counts(1000, 0, 0, 1), 'sending'],
    ['complaints just over 0.1%', counts(1000, 0, 0, 2), 'warning'],
    ['complaints at 0.3% exactly', counts(1000, 0, 0, 3), 'warning'],
    ['complaints just over 0.3%', counts(1000, 0, 0, 4), 'paused'],
  ];
  for (const [name, c, expected] of cases) {
    it(`${name} -> ${expected}`, () => assert.equal(judge(c, t).state, expected));
  }
  it('says why, with the rates', () => {
    const verdict = judge(counts(180, 30, 30, 0), t);
    assert.equal(verdict.bounceRate, 14.29);
    assert.match(verdict.reason, /hard-bounce rate 14\.29% is over 10%/);
    assert.match(judge(counts(10, 0, 0, 0), t).reason, /10 of the 200 messages/);
  });
  it('people opening too little of the tracked mail warns, machines not counted; never pauses', () => {
    const clean = counts(1000, 0, 0, 0);
    const engaged = (tracked: number, opened: number, human: number) =>
      judge({ ...clean, tracked, opened, human_opened: human }, t);
    assert.equal(engaged(199, 199, 0).state, 'sending', 'below the minimum volume');
    assert.equal(engaged(200, 0, 2).state, 'sending', '1% exactly is not under');
    const low = engaged(1000, 900, 9);
    assert.equal(low.state, 'warning', 'under 1%, however many machines opened');
    assert.match(
      low.reason,
      /people opened 0\.9% of 1000 tracked marketing messages, under 1% \(891 more were opened by machines only/,
    );
    assert.equal(
      judge({ ...counts(1894, 106, 106, 0), tracked: 1000, opened: 0, human_opened: 0 }, t).reason.startsWith(
        'hard-bounce',
      ),
      true,
      'bounces speak first',
    );
    assert.equal(
      judge({ ...clean, tracked: 1000, opened: 0, human_opened: 0 }, { ...t, engagementWarning: 0 }).state,
      'sending',
      '0 switches it off',
    );
  });
});
