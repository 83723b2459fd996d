/**
 * When to try again after a temporary failure. `schedule` lists the waits in seconds before
 * the 2nd, 3rd, … attempt; the last value repeats. Nothing is retried past the maximum queue
 * lifetime: the last retry is moved to the deadline, and a failure at or after it bounces
 * (Haraka's rule: the last temporary failure becomes a bounce).
 */

type RetryPlan = { kind: 'retry'; at: number } | { kind: 'expire' };

/** Seconds to wait after `attemptsMade` failed attempts (1 or more). */
export function retryDelaySeconds(attemptsMade: number, schedule: readonly number[]): number {
  if (schedule.length === 0) return 0;
  const index = Math.min(Math.max(attemptsMade, 1), schedule.length) - 1;
  return schedule[index]!;
}

interface RetryInput {
  /** Attempts made so far, including the one that just failed. */
  attemptsMade: number;
  now: number;
  /** When the message entered the queue (epoch ms). */
  queuedAt: number;
  schedule: readonly number[];
  maxLifetimeSeconds: number;
}

export function planRetry(input: RetryInput): RetryPlan {
  const deadline = input.queuedAt + input.maxLifetimeSeconds * 1000;
  if (input.now >= deadline) return { kind: 'expire' };
  const at = input.now + retryDelaySeconds(input.attemptsMade, input.schedule) * 1000;
  return { kind: 'retry', at: Math.min(at, deadline) };
}
