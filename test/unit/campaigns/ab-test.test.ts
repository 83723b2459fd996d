import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupCuts, groupOf } from '../../../src/campaigns/ab-group.js';
import { pickWinner } from '../../../src/campaigns/choose-winners.js';
import type { GroupStats } from '../../../src/services/marketing/campaign-report.js';
import { newId } from '../../../src/shared/ids.js';

describe('A/B groups', () => {
  const split = { holdoutPercentage: 10, testPercentage: 40, variants: ['A', 'B'] };

  it('the same contact lands in the same group of a campaign, and elsewhere in another campaign', () => {
    const campaign = newId();
    const contacts = Array.from({ length: 200 }, () => newId());
    const first = contacts.map((s) => JSON.stringify(groupOf(campaign, s, split)));
    assert.deepEqual(
      contacts.map((s) => JSON.stringify(groupOf(campaign, s, split))),
      first,
    );
    const other = newId();
    assert.notDeepEqual(
      contacts.map((s) => JSON.stringify(groupOf(other, s, split))),
      first,
      'another campaign draws anew',
    );
  });

  it('shares follow the percentages, whatever the order of ids (time-ordered UUIDv7)', () => {
    const campaign = newId();
    const n = 20_000;
    const counts = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const g = groupOf(campaign, newId(), split);
      const key = g.kind === 'test' ? g.variant : g.kind;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    // Three standard deviations of a binomial share: well inside, every run.
    const near = (key: string, share: number) => {
      const got = (counts.get(key) ?? 0) / n;
      const sd = Math.sqrt((share * (1 - share)) / n);
      assert.ok(Math.abs(got - share) < 4 * sd, `${key}: ${got} against ${share}`);
    };
    near('holdout', 0.1);
    near('A', 0.2);
    near('B', 0.2);
    near('rest', 0.5);
  });

  it('cut at exact counts by rank of the stable hash: 100 contacts, 40% test, 20% holdout → 20 A, 20 B, 20 held out, 40 the rest', () => {
    const tally = (
      campaign: string,
      ids: string[],
      split: { holdoutPercentage: number; testPercentage: number | null; variants: string[] },
    ) => {
      const cuts = groupCuts(campaign, ids, split);
      const counts: Record<string, number> = {};
      for (const id of ids) {
        const g = groupOf(campaign, id, split, cuts);
        const key = g.kind === 'test' ? g.variant : g.kind;
        counts[key] = (counts[key] ?? 0) + 1;
      }
      return { cuts, counts };
    };
    const split = { holdoutPercentage: 20, testPercentage: 40, variants: ['A', 'B'] };
    // Every draw, not one lucky one: exact for any campaign and any contacts.
    for (let run = 0; run < 50; run++) {
      const campaign = newId();
      const ids = Array.from({ length: 100 }, () => newId());
      const { cuts, counts } = tally(campaign, ids, split);
      assert.deepEqual(counts, { holdout: 20, A: 20, B: 20, rest: 40 });
      // Stable per contact: the same cuts give every contact the same group, whatever the order.
      const again = [...ids].reverse().map((id) => JSON.stringify(groupOf(campaign, id, split, cuts)));
      assert.deepEqual(
        again.reverse(),
        ids.map((id) => JSON.stringify(groupOf(campaign, id, split, cuts))),
      );
    }
    const ids = Array.from({ length: 7 }, () => newId());
    // Uneven: 7 contacts, 30% test over 3 variants → round(2.1) = 2 in the test, 1 each to A and B; 14% holdout → 1.
    assert.deepEqual(
      tally(newId(), ids, { holdoutPercentage: 14, testPercentage: 30, variants: ['A', 'B', 'C'] }).counts,
      { holdout: 1, A: 1, B: 1, rest: 4 },
    );
    assert.deepEqual(tally(newId(), ids, { holdoutPercentage: 0, testPercentage: 100, variants: ['A', 'B'] }).counts, {
      A: 4,
      B: 3,
    });
    assert.deepEqual(tally(newId(), ids, { holdoutPercentage: 50, testPercentage: null, variants: [] }).counts, {
      holdout: 4,
      rest: 3,
    });
    assert.deepEqual(tally(newId(), [], split).counts, {});
    // A contact who joins after the cut falls by the same cuts: no rank needed.
    const campaign = newId();
    const cuts = groupCuts(campaign, ids, split);
    assert.ok(['holdout', 'test', 'rest'].includes(groupOf(campaign, newId(), split, cuts).kind));
  });

  it('edges: no test, no holdout, the whole list in the test', () => {
    const c = newId();
    const ids = Array.from({ length: 500 }, () => newId());
    assert.ok(
      ids.every((s) => groupOf(c, s, { holdoutPercentage: 0, testPercentage: null, variants: [] }).kind === 'rest'),
    );
    assert.ok(
      ids.every(
        (s) =>
          groupOf(c, s, { holdoutPercentage: 0, testPercentage: 100, variants: ['A', 'B', 'C', 'D', 'E'] }).kind ===
          'test',
      ),
    );
    const all = new Set(
      ids.map((s) =>
        JSON.stringify(
          groupOf(c, s, { holdoutPercentage: 0, testPercentage: 100, variants: ['A', 'B', 'C', 'D', 'E'] }),
        ),
      ),
    );
    assert.equal(all.size, 5, 'every variant gets its share');
    assert.ok(
      ids.some((s) => groupOf(c, s, { holdoutPercentage: 50, testPercentage: null, variants: [] }).kind === 'holdout'),
    );
  });
});

describe('choosing the winner', () => {
  const stats = (delivered: number, humanOpened: number, humanClicked: number): GroupStats => ({
    sent: delivered,
    delivered,
    opened: humanOpened + 50,
    clicked: humanClicked + 50,
    human_opened: humanOpened,
    human_clicked: humanClicked,
    human_open_rate: 0,
    human_click_rate: 0,
  });

  it('by people’s rate per message delivered, machines left out', () => {
    // B has fewer clicks but a higher rate; every variant's machine opens are the same 50.
    const s = new Map([
      ['A', stats(100, 30, 10)],
      ['B', stats(40, 5, 6)],
    ]);
    assert.deepEqual(pickWinner(['A', 'B'], s, 'human_click_rate'), { variant: 'B', by: 'metric' });
    assert.deepEqual(pickWinner(['A', 'B'], s, 'human_open_rate'), { variant: 'A', by: 'metric' });
  });

  it('a tie takes the first of the best, and says so', () => {
    const s = new Map([
      ['A', stats(10, 1, 1)],
      ['B', stats(20, 4, 2)],
      ['C', stats(40, 8, 4)],
    ]);
    assert.deepEqual(pickWinner(['A', 'B', 'C'], s, 'human_click_rate'), { variant: 'A', by: 'tie' });
    assert.deepEqual(pickWinner(['A', 'B', 'C'], s, 'human_open_rate'), { variant: 'B', by: 'tie' });
    assert.deepEqual(
      pickWinner(['A', 'B'], new Map(), 'human_click_rate'),
      { variant: 'A', by: 'tie' },
      'nothing delivered yet',
    );
    assert.deepEqual(
      pickWinner(
        ['A', 'B'],
        new Map([
          ['B', stats(0, 0, 0)],
          ['A', stats(5, 0, 1)],
        ]),
        'human_click_rate',
      ),
      { variant: 'A', by: 'metric' },
    );
  });
});
