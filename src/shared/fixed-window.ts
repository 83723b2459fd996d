/**
 * Fixed-window counters of hits per key, in memory (one node) or in the database
 * (store/rate-limits.ts, shared by nodes). Fixed windows match the headers the SPEC asks for:
 * X-RateLimit-Reset is the end of the current window. A burst of up to 2 x limit can straddle a
 * boundary; that is the documented accuracy of this algorithm.
 */

const MINUTE = 60_000;

export interface Limit {
  limit: number;
  windowMs: number;
  /** Soft limits never refuse: the caller decides what exceeding means (send demotes priority). */
  soft: boolean;
}

export interface Decision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch ms when the window resets. */
  resetAt: number;
}

/** Counts hits per key; `hit` records one and says whether it fits the limit. */
export interface RateLimiter {
  /** Counts `cost` hits (a batch of messages counts each one). */
  hit(key: string, limit: Limit, now: number, cost?: number): Promise<Decision>;
  /** The state of the window without counting a hit. */
  peek(key: string, limit: Limit, now: number): Promise<Decision>;
}

/** Pure window arithmetic, shared by every counter store. */
export const windowStart = (now: number, windowMs: number): number => now - (now % windowMs);

export function decide(count: number, limit: Limit, start: number): Decision {
  return {
    allowed: count <= limit.limit,
    limit: limit.limit,
    remaining: Math.max(0, limit.limit - count),
    resetAt: start + limit.windowMs,
  };
}

/** Seconds a refused client should wait: until the window resets, at least one. */
export const retryAfterSeconds = (decision: Decision, now: number): number =>
  Math.max(1, Math.ceil((decision.resetAt - now) / 1000));

/** In-process counters: exact for one node. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private lastSweep = 0;

  /**
   * `steady`: a clock that never steps (shared/steady-clock.ts). Windows are kept in its time,
   * so a wall clock stepped back releases none early; decisions are given back in the time
   * the caller passed. Without it (tests), windows follow the `now` passed in.
   */
  constructor(private readonly steady?: () => number) {}

  async hit(key: string, limit: Limit, now: number, cost = 1): Promise<Decision> {
    return this.count(key, limit, now, cost);
  }

  async peek(key: string, limit: Limit, now: number): Promise<Decision> {
    return this.count(key, limit, now, 0);
  }

  private count(key: string, limit: Limit, callerNow: number, add: number): Decision {
    const now = this.steady?.() ?? callerNow;
    const decision = this.countAt(key, limit, now, add);
    return now === callerNow ? decision : { ...decision, resetAt: decision.resetAt + (callerNow - now) };
  }

  private countAt(key: string, limit: Limit, now: number, add: number): Decision {
    this.sweep(now);
    const start = windowStart(now, limit.windowMs);
    const mapKey = `${key}|${limit.windowMs}`;
    let w = this.windows.get(mapKey);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      this.windows.set(mapKey, w);
    }
    if (add === 0) return decide(w.count, limit, start);
    const decision = decide(w.count + add, limit, start);
    // A refused hit is not counted, so a client retrying through its 429s is not punished twice.
    if (decision.allowed || limit.soft) w.count += add;
    return decision;
  }

  /** Drops finished windows once a minute so memory follows the number of active keys. */
  private sweep(now: number): void {
    if (now - this.lastSweep < MINUTE) return;
    this.lastSweep = now;
    for (const [key, w] of this.windows) {
      const windowMs = Number(key.slice(key.lastIndexOf('|') + 1));
      if (w.start + windowMs <= now) this.windows.delete(key);
    }
  }
}
