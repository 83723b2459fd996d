import type { DestinationHealth, DomainLimiter } from './domain-limiter.js';

/** What a job waiting at the gate is told: go (it holds a slot), its destination paused, or the node stops. */
type SlotResult = 'go' | 'paused' | 'stopping';

/** A destination as the gate sees it: for /metrics, `queue list`, `delivery status` and the log. */
export interface DestinationState {
  /** The destination's key: its group (provider, MX host or domain) and source address (delivery-job.ts). */
  domain: string;
  /** The mailbox provider (or MX host, or domain of its own) the limits apply to. */
  provider?: string | undefined;
  /** Whether `provider` names a mailbox provider of the table (built in or delivery.providers), not an MX host or a domain. */
  named?: boolean | undefined;
  /** The source address; null: the system's. */
  source?: string | null | undefined;
  /** Recipient domains recently delivered through it. */
  domains?: string[] | undefined;
  /** normal, backoff (limits lowered after slow-down replies, recovering) or paused. */
  state?: DestinationHealth | undefined;
  /** Messages per minute allowed now (lowered in back-off). */
  perMinute?: number | undefined;
  /** The configured limits. */
  limit?: { concurrency: number; perMinute: number } | undefined;
  /** The last slow-down reply and when it came (epoch ms). */
  lastReply?: string | null | undefined;
  lastReplyAt?: number | null | undefined;
  /** Transactions running now. */
  active: number;
  /** Transactions allowed at once now (the limit, lowered while the destination throttles us). */
  allowed: number;
  /** Jobs waiting here for a slot. */
  waiting: number;
  /** Epoch ms until which it is paused after a slow-down reply; 0 when it is not. */
  pausedUntil: number;
  /** Why a job to it cannot start now, or null when one can. */
  hold: 'paused' | 'concurrency' | 'rate' | null;
}

interface Waiter {
  resolve(result: SlotResult): void;
  /** The queue rows of the waiting job (given back at a stop). */
  ids: readonly string[];
}

/**
 * The slots of delivery: the node's concurrency and each destination's limits (DomainLimiter).
 * A job waits here for a slot; each finish, each new waiter and each timer pumps the waiters.
 *
 * No waiter may be left without a way out: a domain that cannot start says, from one reading
 * of the clock, how long until it can (its timer pumps then), or Infinity when its slots are
 * busy (their finish pumps); the node's own concurrency frees on a finish too; a pause sends
 * the domain's waiters back to the queue; a stop sends everyone back.
 */
export class DeliveryGate {
  private readonly waiters = new Map<string, Waiter[]>();
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private halted = false;

  constructor(
    private readonly limiter: DomainLimiter,
    private readonly concurrency: number,
    private readonly events: {
      /** A job of `domain` must wait for the destination's limit (not the node's own). */
      throttled(domain: string): void;
      /** A slot of `domain` was given. */
      started(domain: string): void;
    },
  ) {}

  /** Waits for a slot of `domain`; `ids` are the job's rows. */
  acquire(domain: string, ids: readonly string[]): Promise<SlotResult> {
    if (this.halted) return Promise.resolve('stopping');
    if (!this.waiters.has(domain) && this.running < this.concurrency && this.limiter.tryStart(domain) === 0) {
      this.give(domain);
      return Promise.resolve('go');
    }
    if (this.limiter.holdOf(domain) !== null) this.events.throttled(domain);
    return new Promise((resolve) => {
      const queue = this.waiters.get(domain) ?? [];
      queue.push({ resolve, ids });
      this.waiters.set(domain, queue);
      this.pump();
    });
  }

  /** A slot is given back; `result` tells the limiter how the destination answered. */
  release(domain: string, result: 'ok' | 'throttled' | 'neutral', reply?: string): void {
    this.running--;
    this.limiter.finish(domain, result, reply);
    this.pump();
  }

  /** The limiter paused `domain` from outside (another node's pause): its waiters go back to the queue. */
  paused(): void {
    this.pump();
  }

  /** Jobs waiting for a slot of `domain`. */
  waiting(domain: string): number {
    return this.waiters.get(domain)?.length ?? 0;
  }

  /** Stops: every waiter goes back to the queue; returns their rows. */
  halt(): string[] {
    this.halted = true;
    if (this.timer) clearTimeout(this.timer);
    const ids: string[] = [];
    for (const queue of this.waiters.values()) {
      for (const w of queue.splice(0)) {
        ids.push(...w.ids);
        w.resolve('stopping');
      }
    }
    this.waiters.clear();
    return ids;
  }

  /** Every destination with state: recently used, waited for, or throttling. */
  destinations(): DestinationState[] {
    return this.limiter.domains().map((domain) => {
      const s = this.limiter.snapshot(domain);
      return {
        domain,
        active: s.active,
        allowed: s.allowed,
        waiting: this.waiting(domain),
        pausedUntil: this.limiter.pausedUntil(domain),
        hold: this.limiter.holdOf(domain),
        state: this.limiter.health(domain),
        perMinute: s.perMinute,
        lastReply: s.lastReply,
        lastReplyAt: s.lastReplyAt,
      };
    });
  }

  /** Transactions running now, on every destination. */
  get active(): number {
    return this.running;
  }

  private give(domain: string): void {
    this.running++;
    this.events.started(domain);
  }

  private pump(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    let soonest = Infinity;
    for (const [domain, queue] of this.waiters) {
      if (this.limiter.pausedUntil(domain) > 0) {
        // The destination asked us to slow down: its waiting jobs go back to the queue.
        for (const w of queue.splice(0)) w.resolve('paused');
      }
      while (queue.length > 0 && this.running < this.concurrency) {
        const wait = this.limiter.tryStart(domain);
        if (wait > 0) {
          soonest = Math.min(soonest, wait);
          break;
        }
        queue.shift()!.resolve('go');
        this.give(domain);
      }
      if (queue.length === 0) this.waiters.delete(domain);
    }
    if (soonest !== Infinity) {
      this.timer = setTimeout(() => this.pump(), Math.max(soonest, 1));
      this.timer.unref();
    }
  }
}
