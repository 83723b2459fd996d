import type { DomainLimit } from '../config/schema.js';
import { groupOfKey } from './destination-key.js';
import type { DestinationState } from './gate.js';

/** A destination used lately: its group, the provider named for it, its source address, and the recipient domains lately delivered through it. */
interface Entry {
  group: string;
  provider: string | null;
  source: string | null;
  domains: Set<string>;
  usedAt: number;
}

/** A destination used this recently is still shown (GET /v1/delivery/providers) after the limiter forgot it. */
const RECENT_MS = 5 * 60_000;

/**
 * What delivery on this node knows of each destination (a group and a source address, its
 * key) it used lately, and of each recipient domain the destinations its mail went through:
 * the claim leaves a domain out when all of them are full or paused, the throttle log names
 * them, and /metrics and `queue list` show them.
 */
export class DestinationBook {
  private readonly entries = new Map<string, Entry>();
  private readonly domainKeys = new Map<string, Set<string>>();

  constructor(private readonly now: () => number) {}

  get(key: string): Readonly<Entry> | undefined {
    return this.entries.get(key);
  }

  /** A job to `domain` goes through the destination `key` now. */
  use(key: string, domain: string, what: { group: string; provider: string | null; source: string | null }): void {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { ...what, domains: new Set(), usedAt: 0 };
      this.entries.set(key, entry);
    }
    entry.usedAt = this.now();
    entry.domains.add(domain);
    const keys = this.domainKeys.get(domain) ?? new Set<string>();
    keys.add(key);
    this.domainKeys.set(domain, keys);
  }

  /** The destinations a recipient domain's mail went through lately. */
  keysOf(domain: string): Iterable<string> {
    return this.domainKeys.get(domain) ?? [];
  }

  /**
   * Forgets destinations the limiter forgot (`known` are those it holds), with nothing waiting
   * and idle a while; then returns the recipient domains whose every destination is `full`.
   */
  domainsAllFull(known: ReadonlySet<string>, waiting: (key: string) => number, full: ReadonlySet<string>): string[] {
    for (const [key, entry] of this.entries)
      if (!known.has(key) && waiting(key) === 0 && this.now() - entry.usedAt >= RECENT_MS) this.entries.delete(key);
    const out: string[] = [];
    for (const [domain, keys] of this.domainKeys) {
      for (const k of keys) if (!this.entries.has(k)) keys.delete(k);
      if (keys.size === 0) this.domainKeys.delete(domain);
      else if ([...keys].every((k) => full.has(k))) out.push(domain);
    }
    return out;
  }

  /** Every destination with state as /metrics and `queue list` show it: those the gate holds, and those used lately, idle at full health. */
  view(held: DestinationState[], limitOf: (key: string) => DomainLimit): DestinationState[] {
    const seen = new Set(held.map((s) => s.domain));
    const idle: DestinationState[] = [...this.entries.keys()]
      .filter((key) => !seen.has(key))
      .map((key) => ({
        domain: key,
        active: 0,
        allowed: limitOf(key).concurrency,
        waiting: 0,
        pausedUntil: 0,
        hold: null,
        state: 'normal',
        perMinute: limitOf(key).perMinute,
        lastReply: null,
        lastReplyAt: null,
      }));
    return [...held, ...idle].map((s) => {
      const entry = this.entries.get(s.domain);
      const limit = limitOf(s.domain);
      return {
        ...s,
        provider: entry?.group ?? groupOfKey(s.domain),
        named: entry ? entry.provider !== null : false,
        source: entry?.source ?? null,
        domains: entry ? [...entry.domains].sort() : [],
        limit: { concurrency: limit.concurrency, perMinute: limit.perMinute },
      };
    });
  }
}
