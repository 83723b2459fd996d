import type { DomainLimit } from '../config/schema.js';

/**
 * Per destination domain limits: simultaneous transactions, messages per minute (a token
 * bucket holding five seconds' worth, so bursts stay short), and slowing down when the domain
 * says we are too many or too fast: the allowed concurrency halves and new transactions pause
 * (30 s, doubling per throttle up to 10 min); each success then gives one connection back.
 * Pure arithmetic on an injected clock; the engine asks it before starting a transaction.
 */

const PAUSE_BASE_MS = 30_000;
const PAUSE_MAX_MS = 10 * 60_000;
const BURST_SECONDS = 5;

interface DomainState {
  active: number;
  /** Current concurrency: the configured one, lowered by throttling. */
  allowed: number;
  tokens: number;
  refilledAt: number;
  pausedUntil: number;
  throttles: number;
}

export class DomainLimiter {
  private readonly states = new Map<string, DomainState>();

  constructor(
    private readonly limitOf: (domain: string) => DomainLimit,
    private readonly now: () => number,
  ) {}

  private state(domain: string): DomainState {
    let s = this.states.get(domain);
    if (!s) {
      const limit = this.limitOf(domain);
      s = { active: 0, allowed: limit.concurrency, tokens: this.capacity(limit), refilledAt: this.now(), pausedUntil: 0, throttles: 0 };
      this.states.set(domain, s);
    }
    return s;
  }

  private capacity(limit: DomainLimit): number {
    return Math.max(1, Math.ceil((limit.perMinute * BURST_SECONDS) / 60));
  }

  private refill(domain: string, s: DomainState): void {
    const limit = this.limitOf(domain);
    const now = this.now();
    s.tokens = Math.min(this.capacity(limit), s.tokens + ((now - s.refilledAt) * limit.perMinute) / 60_000);
    s.refilledAt = now;
  }

  /** Whether a transaction to `domain` may start now. */
  canStart(domain: string): boolean {
    return this.waitMs(domain) === 0;
  }

  /** Milliseconds until a transaction may start: 0 now, Infinity while all slots are busy. */
  waitMs(domain: string): number {
    const s = this.state(domain);
    const now = this.now();
    if (s.pausedUntil > now) return s.pausedUntil - now;
    if (s.active >= s.allowed) return Infinity;
    this.refill(domain, s);
    if (s.tokens >= 1) return 0;
    const perMinute = this.limitOf(domain).perMinute;
    return perMinute > 0 ? Math.ceil(((1 - s.tokens) * 60_000) / perMinute) : Infinity;
  }

  /** Until when the domain is paused after throttling (0 when it is not). */
  pausedUntil(domain: string): number {
    const s = this.states.get(domain);
    return s && s.pausedUntil > this.now() ? s.pausedUntil : 0;
  }

  /**
   * Takes a slot and a token when the domain can start now, and returns 0; otherwise returns
   * how long until it can (Infinity while every slot is busy: a finish() frees one). One read
   * of the clock decides both: a caller that asked again for the wait could see the token that
   * arrived in between, and take "0" for "wait for a finish" while nothing is running.
   */
  tryStart(domain: string): number {
    const wait = this.waitMs(domain);
    if (wait > 0) return wait;
    const s = this.state(domain);
    s.active++;
    s.tokens -= 1;
    return 0;
  }

  /**
   * Gives the slot back. `throttled`: the domain answered with a slow-down reply; `ok`: it
   * accepted a message; `neutral`: anything else (a bounce, a failed connection).
   */
  finish(domain: string, result: 'ok' | 'throttled' | 'neutral'): void {
    const s = this.state(domain);
    s.active = Math.max(0, s.active - 1);
    const configured = this.limitOf(domain).concurrency;
    if (result === 'throttled') {
      s.throttles++;
      s.allowed = Math.max(1, Math.floor(s.allowed / 2));
      s.pausedUntil = this.now() + Math.min(PAUSE_MAX_MS, PAUSE_BASE_MS * 2 ** (s.throttles - 1));
    } else if (result === 'ok') {
      s.throttles = 0;
      s.allowed = Math.min(configured, s.allowed + 1);
    }
  }

  /** Why a transaction to `domain` cannot start now, or null when it can. */
  holdOf(domain: string): 'paused' | 'concurrency' | 'rate' | null {
    const wait = this.waitMs(domain);
    if (wait === 0) return null;
    const s = this.state(domain);
    if (s.pausedUntil > this.now()) return 'paused';
    return wait === Infinity ? 'concurrency' : 'rate';
  }

  /** Transactions to `domain` allowed at once now: the configured concurrency, lowered while it throttles us. */
  allowed(domain: string): number {
    return this.states.get(domain)?.allowed ?? this.limitOf(domain).concurrency;
  }

  /** Domains with state (recently used, or throttling): the only ones that can be held back. */
  domains(): string[] {
    return [...this.states.keys()];
  }

  /** Forgets idle domains at full health, so the map does not grow without bound. */
  prune(): void {
    const now = this.now();
    for (const [domain, s] of this.states) {
      if (s.active === 0 && s.pausedUntil <= now && s.allowed >= this.limitOf(domain).concurrency) {
        this.refill(domain, s);
        if (s.tokens >= this.capacity(this.limitOf(domain))) this.states.delete(domain);
      }
    }
  }

  /** For logs and tests. */
  snapshot(domain: string): { active: number; allowed: number; pausedUntil: number; tokens: number } {
    const s = this.state(domain);
    this.refill(domain, s);
    return { active: s.active, allowed: s.allowed, pausedUntil: s.pausedUntil, tokens: s.tokens };
  }
}

/** The limit of a destination domain: its own entry, or the default. */
export const domainLimitOf =
  (limits: Record<string, DomainLimit>, fallback: DomainLimit) =>
  (domain: string): DomainLimit =>
    limits[domain] ?? fallback;
