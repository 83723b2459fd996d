import { domainClass } from '../observability/domain-class.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { Db, Dialect } from '../store/infra/db.js';
import {
  aggregateAttempts,
  aggregateEvents,
  firstEventAt,
  floorHour,
  HOUR,
  lastStatsHour,
  replaceStats,
  type StatRow,
} from '../store/stats.js';

/** Hours caught up at most when the roll-up has not run for a while (or ever). */
const MAX_BACKFILL_HOURS = 24 * 31;

/** An event type (and its details) as the metrics it counts towards. */
function metricsOf({
  type,
  detail,
  machine,
  firstHuman,
}: {
  type: string;
  detail: string | null;
  machine: boolean;
  firstHuman: boolean;
}): string[] {
  switch (type) {
    case 'email.sent':
      return ['sent'];
    case 'email.delivered':
      return ['delivered'];
    case 'email.delivery_delayed':
      return ['delivery_delayed'];
    case 'email.bounced':
      return [
        'bounced',
        detail === 'hard' ? 'bounced_permanent' : detail === 'soft' ? 'bounced_transient' : 'bounced_undetermined',
      ];
    case 'email.complained':
      return ['complained'];
    case 'email.suppressed':
      return ['suppressed'];
    case 'email.failed':
      return ['failed'];
    case 'email.held':
      return ['held'];
    case 'email.opened':
    case 'email.clicked': {
      const base = type === 'email.opened' ? 'opened' : 'clicked';
      const all = detail === '1' || detail === 'true' ? [base, `unique_${base}`] : [base];
      // People apart from machines (Apple's prefetch, scanners): an image proxy's is a person's open.
      if (machine) return [...all, `machine_${base}`];
      return [...all, `human_${base}`, ...(firstHuman ? [`unique_human_${base}`] : [])];
    }
    default:
      return [];
  }
}

/**
 * A periodic task: recomputes the hourly counts of `stats_hourly` (the overview's charts and
 * `GET /v1/emails/metrics`) for the hours since the last roll-up, the current one included,
 * from the events and attempts. An hour is recomputed whole, so a run on another node or a
 * second run counts nothing twice. Returns how many hours it rolled up.
 */
export async function rollUpStats(deps: { db: Db; dialect: Dialect; clock: Clock; logger: Logger }): Promise<number> {
  const { db, dialect, clock } = deps;
  const rollUpRange = async (from: number, to: number) => {
    const [events, attempts] = await Promise.all([
      aggregateEvents(db, dialect, from, to),
      aggregateAttempts(db, from, to),
    ]);
    const rows = new Map<string, StatRow>();
    const add = (
      workspace_id: string,
      hour: number,
      domain_id: string,
      destination: string,
      metric: string,
      count: number,
      test = 0,
    ) => {
      const key = `${workspace_id} ${hour} ${domain_id} ${destination} ${metric} ${test}`;
      const row = rows.get(key);
      if (row) row.count += count;
      else rows.set(key, { workspace_id, hour, domain_id, destination, metric, count, test });
    };
    for (const e of events)
      for (const metric of metricsOf(e)) add(e.workspace_id, e.hour, e.domain_id, '', metric, e.count, e.test);
    for (const a of attempts)
      add(
        a.workspace_id,
        a.hour,
        '',
        domainClass(`x@${a.recipient_domain}`, a.mx_host),
        `attempt_${a.outcome}`,
        a.count,
      );
    await replaceStats(db, from, to, [...rows.values()]);
  };

  const now = clock.now();
  const current = floorHour(now);
  const last = await lastStatsHour(db);
  let from: number;
  if (last === null) {
    const first = await firstEventAt(db);
    from = first === null ? current : Math.max(floorHour(first), current - MAX_BACKFILL_HOURS * HOUR);
  } else {
    // The previous hour again too: events recorded just before it closed commit a moment later.
    from = Math.max(Math.min(last, current) - HOUR, current - MAX_BACKFILL_HOURS * HOUR);
  }
  let hours = 0;
  for (let hour = from; hour <= current; hour += HOUR) {
    await rollUpRange(hour, hour + HOUR);
    hours++;
  }
  if (hours > 2) deps.logger.info({ component: 'stats', hours }, 'hourly statistics caught up');
  return hours;
}
