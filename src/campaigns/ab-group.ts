import { createHash } from 'node:crypto';

/** Where a recipient of a campaign falls: held out, in the A/B test (with its variant), or the rest. */
export type Group = { kind: 'holdout' } | { kind: 'test'; variant: string } | { kind: 'rest' };

export interface Split {
  holdoutPercentage: number;
  /** null: no A/B test (everyone not held out is the rest). */
  testPercentage: number | null;
  variants: readonly string[];
}

/**
 * A recipient's group, from a hash of the campaign and the contact: the same contact always
 * lands in the same group of a campaign (a page queued again after a crash, the rest queued
 * after the test), and contacts spread over the groups as if drawn at random, whatever the
 * order of their ids. Shares are exact in expectation only: of n recipients, a group of share
 * p holds p·n ± about √(p(1−p)·n).
 */
export function groupOf(campaignId: string, subscriberId: string, split: Split): Group {
  const digest = createHash('sha256').update(`${campaignId}:${subscriberId}`).digest();
  // 48 bits: a double holds them exactly, and 2^48 buckets are plenty.
  const u = digest.readUIntBE(0, 6) / 2 ** 48;
  const holdout = split.holdoutPercentage / 100;
  if (u < holdout) return { kind: 'holdout' };
  if (split.testPercentage === null || split.variants.length === 0) return { kind: 'rest' };
  const test = split.testPercentage / 100;
  if (u >= holdout + test) return { kind: 'rest' };
  const index = Math.min(split.variants.length - 1, Math.floor(((u - holdout) / test) * split.variants.length));
  return { kind: 'test', variant: split.variants[index]! };
}
