import { createHash } from 'node:crypto';
import type { GroupCuts } from '../store/campaigns.js';

/** Where a recipient of a campaign falls: held out, in the A/B test (with its variant), or the rest. */
type Group = { kind: 'holdout' } | { kind: 'test'; variant: string } | { kind: 'rest' };

export interface Split {
  holdoutPercentage: number;
  /** null: no A/B test (everyone not held out is the rest). */
  testPercentage: number | null;
  variants: readonly string[];
}

/** 48 bits of a hash of the campaign and the contact: a double holds them exactly. */
const SPACE = 2 ** 48;
const hashOf = (campaignId: string, subscriberId: string): number =>
  createHash('sha256').update(`${campaignId}:${subscriberId}`).digest().readUIntBE(0, 6);

/**
 * Where to cut a campaign's recipients, once, when its queuing starts: rank them by the
 * stable hash and cut at exact counts (of 100 contacts, a 20% holdout is 20, never 13), the
 * test's count split evenly over the variants (the first ones take the remainder). The cuts
 * are hash values, kept on the campaign: each contact's group is a function of its own hash
 * and the cuts (groupOf), so it stays the same when a page is queued again after a crash or
 * the rest is queued after the test, and a contact who joins later falls by the same cuts.
 */
export function groupCuts(campaignId: string, subscriberIds: Iterable<string>, split: Split): GroupCuts {
  const hashes: number[] = [];
  for (const id of subscriberIds) hashes.push(hashOf(campaignId, id));
  hashes.sort((a, b) => a - b);
  const n = hashes.length;
  const at = (rank: number) => (rank < n ? hashes[rank]! : SPACE);
  const held = Math.min(n, Math.round((n * split.holdoutPercentage) / 100));
  const variants: number[] = [];
  if (split.testPercentage !== null && split.variants.length > 0) {
    const tested = Math.min(n - held, Math.round((n * split.testPercentage) / 100));
    const v = split.variants.length;
    let rank = held;
    for (let i = 0; i < v; i++) {
      rank += Math.floor(tested / v) + (i < tested % v ? 1 : 0);
      variants.push(at(rank));
    }
  }
  return { holdout: at(held), variants };
}

/**
 * A recipient's group, from a hash of the campaign and the contact. With the campaign's cuts
 * (groupCuts) the groups hold exact counts; without them (a campaign whose queuing began
 * before cuts were kept) the shares are exact in expectation only: of n recipients, a group of
 * share p holds p·n ± about √(p(1−p)·n).
 */
export function groupOf(campaignId: string, subscriberId: string, split: Split, cuts?: GroupCuts | null): Group {
  const h = hashOf(campaignId, subscriberId);
  if (cuts) {
    if (h < cuts.holdout) return { kind: 'holdout' };
    if (split.testPercentage === null) return { kind: 'rest' };
    const index = cuts.variants.findIndex((bound) => h < bound);
    return index === -1 || index >= split.variants.length
      ? { kind: 'rest' }
      : { kind: 'test', variant: split.variants[index]! };
  }
  const u = h / SPACE;
  const holdout = split.holdoutPercentage / 100;
  if (u < holdout) return { kind: 'holdout' };
  if (split.testPercentage === null || split.variants.length === 0) return { kind: 'rest' };
  const test = split.testPercentage / 100;
  if (u >= holdout + test) return { kind: 'rest' };
  const index = Math.min(split.variants.length - 1, Math.floor(((u - holdout) / test) * split.variants.length));
  return { kind: 'test', variant: split.variants[index]! };
}
