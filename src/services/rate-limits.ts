import type { Plan, Workspace } from '../store/tables.js';

/**
 * Rate-limit policy (SPEC Limits) and a fixed-window counter.
 *
 * Fixed windows match the headers the SPEC asks for: X-RateLimit-Reset is the end of the
 * current window. A burst of up to 2 × limit can straddle a boundary; that is the documented
 * accuracy of this algorithm.
 */

export type Operation =
  | 'send.transactional'
  | 'send.marketing'
  | 'campaigns.send'
  | 'subscribers.write'
  | 'subscribers.read'
  | 'domains.write'
  | 'domains.read'
  | 'api'
  | 'auth.failure';

export interface Limit {
  limit: number;
  windowMs: number;
  /** Soft limits never refuse: the caller decides what exceeding means (send demotes priority). */
  soft: boolean;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

export const PLAN_RATES: Record<Plan, { transactional: number; marketing: number }> = {
  starter: { transactional: 5, marketing: 500 },
  professional: { transactional: 50, marketing: 1000 },
  // Enterprise numbers are set per workspace (`mailsvc workspaces set-plan`); these apply until then.
  enterprise: { transactional: 50, marketing: 1000 },
};

const FIXED: Record<Exclude<Operation, 'send.transactional' | 'send.marketing'>, Limit> = {
  'campaigns.send': { limit: 5, windowMs: MINUTE, soft: false },
  'subscribers.write': { limit: 100, windowMs: SECOND, soft: false },
  'subscribers.read': { limit: 100, windowMs: SECOND, soft: false },
  'domains.write': { limit: 10, windowMs: MINUTE, soft: false },
  'domains.read': { limit: 60, windowMs: MINUTE, soft: false },
  // Every other authenticated endpoint (the SPEC leaves them open).
  api: { limit: 100, windowMs: SECOND, soft: false },
  // Failed authentications per client address: slows down key guessing.
  'auth.failure': { limit: 20, windowMs: MINUTE, soft: false },
};

export function limitFor(operation: Operation, workspace: Pick<Workspace, 'plan' | 'transactional_per_second' | 'marketing_per_second'> | null): Limit {
  if (operation === 'send.transactional' || operation === 'send.marketing') {
    const plan = PLAN_RATES[workspace?.plan ?? 'starter'];
    if (operation === 'send.transactional') {
      return { limit: workspace?.transactional_per_second ?? plan.transactional, windowMs: SECOND, soft: true };
    }
    return { limit: workspace?.marketing_per_second ?? plan.marketing, windowMs: SECOND, soft: false };
  }
  return FIXED[operation];
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
export const retryAfterSeconds = (decision: Decision, now: number): number => Math.max(1, Math.ceil((decision.resetAt - now) / 1000));

/** In-process counters: exact for one node. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private lastSweep = 0;

  async hit(key: string, limit: Limit, now: number, cost = 1): Promise<Decision> {
    return this.count(key, limit, now, cost);
  }

  async peek(key: string, limit: Limit, now: number): Promise<Decision> {
    return this.count(key, limit, now, 0);
  }

  private count(key: string, limit: Limit, now: number, add: number): Decision {
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
