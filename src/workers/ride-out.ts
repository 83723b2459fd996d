import { isFault } from '../shared/errors.js';

/**
 * Waiting out a fault of the machine (the database restarting, a dropped connection, a disk
 * briefly full): the kernel's passes and a job's results back off and try again on their own,
 * bounded, with jitter so that the workers of a cluster do not all come back at one instant.
 */

const FIRST_MS = 250;
const MAX_MS = 10_000;

/** The wait before retry number `attempt` (0 first): 250 ms doubling to 10 s, ±25%. */
export const faultBackoff = (attempt: number, random: () => number = Math.random): number =>
  Math.round(Math.min(MAX_MS, FIRST_MS * 2 ** Math.min(attempt, 16)) * (0.75 + random() * 0.5));

interface RideOutOptions {
  /** How long to keep trying after the first fault, e.g. while a lease may still be ours. */
  forMs: number;
  /** Stop trying (the process is stopping): the last fault is thrown. */
  stopping?: () => boolean;
  /** Called before each wait, to log it. */
  onFault?: (err: unknown, attempt: number, waitMs: number) => void;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Runs `work`; while it fails with a fault, waits and runs it again, for at most `forMs`. Any other error is thrown at once. */
export async function rideOut<T>(work: () => Promise<T>, options: RideOutOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? pause;
  const deadline = now() + options.forMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const wait = faultBackoff(attempt);
      if (!isFault(err) || options.stopping?.() || now() + wait > deadline) throw err;
      options.onFault?.(err, attempt, wait);
      await sleep(wait);
    }
  }
}
