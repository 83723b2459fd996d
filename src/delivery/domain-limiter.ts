import type { DomainLimit } from '../config/schema.js';

/**
 * Per destination limits (a destination: a mailbox provider, an MX host or a domain of its
 * own, from one source address): simultaneous transactions, messages per minute (a token
 * bucket holding five seconds' worth, so bursts stay short), and slowing down when the
 * destination says we are too many or too fast: the allowed concurrency and the rate halve and
 * new transactions pause (30 s, doubling per throttle up to 10 min: delivery.backoff); each
 * success then gives one connection and an eighth of the rate back.
 * Pure arithmetic on an injected clock; the engine asks it before starting a transaction.
 */

const PAUSE_BASE_MS = 30_000;
const PAUSE_MAX_MS = 10 * 60_000;
const BURST_SECONDS = 5;
/** The rate never drops below this share of the limit, and climbs back by RATE_STEP per success. */
const RATE_FLOOR = 1 / 16;
const RATE_STEP = 1 / 8;

interface BackoffOptions {
  pauseMs: number;
  maxPauseMs: number;
}

/** normal: at its limits; backoff: limits lowered after slow-down replies, recovering; paused: no new transaction until pausedUntil. */
export type DestinationHealth = 'normal' | 'backoff' | 'paused';

interface DomainState {
  active: number;
  /** Current concurrency: the configured one, lowered by throttling. */
  allowed: number;
  tokens: number;
  refilledAt: number;
  pausedUntil: number;
  throttles: number;
  /** The share of the configured rate allowed now (1: all of it). */
  rate: number;
  /** The last slow-down reply and when it came. */
  lastReply: string | null;
  lastReplyAt: number | null;
}

export class DomainLimiter {
  private readonly states = new Map<string, DomainState>();

  constructor(
    private readonly limitOf: (domain: string) => DomainLimit,
    private readonly now: () => number,
    private readonly backoff: BackoffOptions = { pauseMs: PAUSE_BASE_MS, maxPauseMs: PAUSE_MAX_MS },
  ) {}

  /** Messages per minute allowed now: the limit, lowered while the destination throttles us. */
  private perMinute(domain: string, s: DomainState): number {
    return Math.max(1, this.limitOf(domain).perMinute * s.rate);
  }

  private state(domain: string): DomainState {
    let s = this.states.get(domain);
    if (!s) {
      const limit = this.limitOf(domain);
      s = {
        active: 0,
        allowed: limit.concurrency,
        tokens: this.capacity(limit.perMinute),
        refilledAt: this.now(),
        pausedUntil: 0,
        throttles: 0,
        rate: 1,
        lastReply: null,
        lastReplyAt: null,
      };
      this.states.set(domain, s);
    }
    return s;
  }

  private capacity(perMinute: number): number {
    return Math.max(1, Math.ceil((perMinute * BURST_SECONDS) / 60));
  }

  private refill(domain: string, s: DomainState): void {
    const perMinute = this.perMinute(domain, s);
    const now = this.now();
    s.tokens = Math.min(this.capacity(perMinute), s.tokens + ((now - s.refilledAt) * perMinute) / 60_000);
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
    const perMinute = this.perMinute(domain, s);
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
   * Gives the slot back. `throttled`: the domain answered with a slow-down reply (`reply`);
   * `ok`: it accepted a message; `neutral`: anything else (a bounce, a failed connection).
   */
  finish(domain: string, result: 'ok' | 'throttled' | 'neutral', reply?: string): void {
    const s = this.state(domain);
    s.active = Math.max(0, s.active - 1);
    const configured = this.limitOf(domain).concurrency;
    if (result === 'throttled') {
      this.refill(domain, s);
      s.throttles++;
      s.allowed = Math.max(1, Math.floor(s.allowed / 2));
      s.rate = Math.max(RATE_FLOOR, s.rate / 2);
      s.tokens = Math.min(s.tokens, this.capacity(this.perMinute(domain, s)));
      s.pausedUntil = this.now() + Math.min(this.backoff.maxPauseMs, this.backoff.pauseMs * 2 ** (s.throttles - 1));
      s.lastReply = reply ?? null;
      s.lastReplyAt = this.now();
    } else if (result === 'ok') {
      this.refill(domain, s);
      s.throttles = 0;
      s.allowed = Math.min(configured, s.allowed + 1);
      s.rate = Math.min(1, s.rate + RATE_STEP);
    }
  }

  /**
   * Pauses `domain` until `until` (another node got the slow-down reply): a pause, not a
   * throttle of our own, so the limits stay as they are. Returns whether it changed anything.
   */
  pauseUntil(domain: string, until: number): boolean {
    if (until <= this.now()) return false;
    const s = this.state(domain);
    if (s.pausedUntil >= until) return false;
    s.pausedUntil = until;
    return true;
  }

  /** normal, backoff (limits lowered, recovering) or paused. */
  health(domain: string): DestinationHealth {
    const s = this.states.get(domain);
    if (!s) return 'normal';
    if (s.pausedUntil > this.now()) return 'paused';
    return s.allowed < this.limitOf(domain).concurrency || s.rate < 1 ? 'backoff' : 'normal';
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
      if (s.active === 0 && s.pausedUntil <= now && s.allowed >= this.limitOf(domain).concurrency && s.rate >= 1) {
        this.refill(domain, s);
        if (s.tokens >= this.capacity(this.perMinute(domain, s))) this.states.delete(domain);
      }
    }
  }

  /** For logs and tests. */
  snapshot(domain: string): {
    active: number;
    allowed: number;
    pausedUntil: number;
    tokens: number;
    perMinute: number;
    lastReply: string | null;
    lastReplyAt: number | null;
  } {
    const s = this.state(domain);
    this.refill(domain, s);
    return {
      active: s.active,
      allowed: s.allowed,
      pausedUntil: s.pausedUntil,
      tokens: s.tokens,
      perMinute: Math.floor(this.perMinute(domain, s)),
      lastReply: s.lastReply,
      lastReplyAt: s.lastReplyAt,
    };
  }
}

/** The limit of a destination domain: its own entry, or the default. */
export const domainLimitOf =
  (limits: Record<string, DomainLimit>, fallback: DomainLimit) =>
  (domain: string): DomainLimit =>
    limits[domain] ?? fallback;
