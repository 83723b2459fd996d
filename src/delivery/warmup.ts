import type { Config } from '../config/schema.js';
import type { Db } from '../store/infra/db.js';
import { listWarmups, type IpWarmup } from '../store/warmups.js';

/**
 * IP warm-up: a new address earns its reputation by sending little at first. An address in
 * warm-up sends each warm-up day at most the day's cap per mailbox provider: its own schedule,
 * else `delivery.warmup` (start, doubling each day up to the target). Past the end of the
 * schedule it is warm.
 */

interface WarmupDay {
  /** Days since the warm-up started (0: the first). */
  day: number;
  /** Messages per provider allowed today; null once warm. */
  cap: number | null;
  /** When today began and the next day begins (epoch ms). */
  periodStart: number;
  nextPeriod: number;
}

type WarmupSettings = Config['delivery']['warmup'];

export function warmupDay(
  w: Pick<IpWarmup, 'started_at' | 'schedule'>,
  settings: WarmupSettings,
  now: number,
): WarmupDay {
  const dayMs = settings.daySeconds * 1000;
  const day = Math.max(0, Math.floor((now - w.started_at) / dayMs));
  const periodStart = w.started_at + day * dayMs;
  let cap: number | null;
  if (w.schedule) cap = w.schedule[day] ?? null;
  else {
    const doubled = settings.start * 2 ** day;
    cap = doubled >= settings.target ? null : doubled;
  }
  return { day, cap, periodStart, nextPeriod: periodStart + dayMs };
}

/** The schedule as it will run: each day's cap (the default's doubling up to the target). */
export function scheduleOf(schedule: number[] | null, settings: WarmupSettings): number[] {
  if (schedule) return schedule;
  const out: number[] = [];
  for (let cap = settings.start; cap < settings.target; cap *= 2) out.push(cap);
  return out;
}

/**
 * How long the warm-ups read from the database are used before they are read again: a
 * warm-up started (on any node) applies to delivery within this long.
 */
export const WARMUP_REFRESH_MS = 1000;

/** The addresses in warm-up, read from the database at most every few seconds. */
export function warmupDirectory(db: Db, now: () => number): { get(address: string): Promise<IpWarmup | undefined> } {
  let rows = new Map<string, IpWarmup>();
  let readAt = -Infinity;
  let reading: Promise<void> | null = null;
  const read = () => {
    reading ??= listWarmups(db)
      .then((list) => {
        rows = new Map(list.map((w) => [w.address, w]));
        readAt = now();
      })
      .finally(() => {
        reading = null;
      });
    return reading;
  };
  return {
    async get(address) {
      if (now() - readAt >= WARMUP_REFRESH_MS) await read();
      return rows.get(address);
    },
  };
}
