import type { DomainClass } from '../../observability/domain-class.js';
import { validationError } from '../../shared/errors.js';
import { listDomains } from '../../store/domains.js';
import { countQueueDepth, floorHour, HOUR, listStats } from '../../store/stats.js';
import type { ServiceDeps } from '../deps.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * What happened to a workspace's live mail, counted per hour (tasks/roll-up-stats.ts keeps
 * `stats_hourly` current): `GET /v1/emails/metrics` (the shape the Resend SDK's
 * `emails.metrics` reads) and the figures of the dashboard's overview.
 */

/** Counted per hour and sending domain. */
const COUNT_METRICS = [
  'sent',
  'delivered',
  'delivery_delayed',
  'bounced',
  'bounced_permanent',
  'bounced_transient',
  'bounced_undetermined',
  'complained',
  'suppressed',
  'failed',
  'held',
  'opened',
  'clicked',
  'unique_opened',
  'unique_clicked',
  'human_opened',
  'human_clicked',
  'unique_human_opened',
  'unique_human_clicked',
  'machine_opened',
  'machine_clicked',
] as const;
/** Ratios of the counts, 0 to 1. */
const RATE_METRICS = [
  'delivery_rate',
  'bounce_rate',
  'complaint_rate',
  'open_rate',
  'click_rate',
  'human_open_rate',
  'human_click_rate',
] as const;
const METRICS = [...COUNT_METRICS, ...RATE_METRICS] as const;
type Metric = (typeof METRICS)[number];
/** Resend's metrics that mailsvc does not count. */
const UNAVAILABLE = new Set(['received', 'unsubscribed', 'unsubscribe_rate']);

export const GRANULARITIES = ['hourly', 'daily', 'weekly', 'monthly'] as const;
type Granularity = (typeof GRANULARITIES)[number];

interface MetricsQuery {
  start_date?: string | undefined;
  end_date?: string | undefined;
  timezone?: string | undefined;
  granularity?: Granularity | undefined;
  metrics?: string | undefined;
  dimensions?: string | undefined;
  domain_id?: string | undefined;
  email_id?: string | undefined;
  broadcast_id?: string | undefined;
}

type Totals = Partial<Record<Metric, number>>;

interface MetricsResult {
  object: 'metrics';
  start_date: string;
  end_date: string;
  metrics: Metric[];
  dimensions: Array<'period' | 'domain'>;
  granularity: Granularity;
  timezone: string;
  totals: Totals;
  data?: Array<Totals & { period?: string; domain_id?: string; domain_name?: string }>;
}

type DestinationStats = Record<
  DomainClass,
  { delivered: number; deferred: number; bounced: number; failed: number; delivery_rate: number; bounce_rate: number }
>;

export interface EmailMetricsService {
  metrics(workspaceId: string, query: MetricsQuery): Promise<MetricsResult>;
  /** Counts per hour (the last `hours`) or per UTC day (the last `days`), for charts. */
  /** Live mail's counts, or test mail's (`test`). */
  series(
    workspaceId: string,
    unit: 'hour' | 'day',
    count: number,
    test?: boolean,
  ): Promise<Array<{ start: number; counts: Record<(typeof COUNT_METRICS)[number], number> }>>;
  /** Attempts per destination class over the last `days`. */
  destinations(workspaceId: string, days: number): Promise<DestinationStats>;
  /** The workspace's queue now: waiting, in flight, held. */
  queueDepth(workspaceId: string): Promise<Record<'queued' | 'sending' | 'deferred' | 'held', number>>;
}

const DAY = 24 * HOUR;
/** The first roll-up looks this far back at most (events older than retention are gone anyway). */
const MAX_RANGE_DAYS = 400;
const MAX_HOURLY_DAYS = 31;

const ratio = (part: number, whole: number): number => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000);

const emptyCounts = () =>
  Object.fromEntries(COUNT_METRICS.map((m) => [m, 0])) as Record<(typeof COUNT_METRICS)[number], number>;

function withRates(counts: Record<string, number>, wanted: readonly Metric[]): Totals {
  const all: Record<string, number> = {
    ...counts,
    delivery_rate: ratio(counts.delivered ?? 0, counts.sent ?? 0),
    bounce_rate: ratio(counts.bounced ?? 0, (counts.sent ?? 0) + (counts.bounced ?? 0)),
    complaint_rate: ratio(counts.complained ?? 0, counts.delivered ?? 0),
    open_rate: ratio(counts.unique_opened ?? 0, counts.delivered ?? 0),
    click_rate: ratio(counts.unique_clicked ?? 0, counts.delivered ?? 0),
    human_open_rate: ratio(counts.unique_human_opened ?? 0, counts.delivered ?? 0),
    human_click_rate: ratio(counts.unique_human_clicked ?? 0, counts.delivered ?? 0),
  };
  return Object.fromEntries(wanted.map((m) => [m, all[m] ?? 0]));
}

/** A date or date-time (ISO 8601) as epoch ms; a bare date is the start of that day in UTC (or, for an end date, its end). */
function parseDate(value: string, field: string, end: boolean): number {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const ms = Date.parse(dateOnly ? `${value}T00:00:00Z` : value);
  if (!Number.isFinite(ms)) throw validationError(field, `must be an ISO 8601 date or date-time, got "${value}"`);
  return dateOnly && end ? ms + DAY : ms;
}

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** The local calendar parts of an instant in a time zone. */
function localParts(ms: number, format: Intl.DateTimeFormat) {
  const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour) === 24 ? 0 : Number(parts.hour),
  };
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The label of the period an hour (its UTC start) falls in. */
function periodOf(hour: number, granularity: Granularity, format: Intl.DateTimeFormat, timeZone: string): string {
  const p = localParts(hour, format);
  if (granularity === 'hourly')
    return timeZone === 'UTC'
      ? new Date(hour).toISOString()
      : `${p.year}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:00`;
  if (granularity === 'daily') return `${p.year}-${pad(p.month)}-${pad(p.day)}`;
  if (granularity === 'monthly') return `${p.year}-${pad(p.month)}-01`;
  // Weekly: the Monday that starts the week.
  const local = Date.UTC(p.year, p.month - 1, p.day);
  const monday = new Date(local - ((new Date(local).getUTCDay() + 6) % 7) * DAY);
  return monday.toISOString().slice(0, 10);
}

export function createEmailMetricsService(deps: ServiceDeps): EmailMetricsService {
  const { db, clock } = deps;

  const series: EmailMetricsService['series'] = async (workspaceId, unit, count, test = false) => {
    const step = unit === 'hour' ? HOUR : DAY;
    const end = unit === 'hour' ? floorHour(clock.now()) + HOUR : Math.floor(clock.now() / DAY) * DAY + DAY;
    const start = end - count * step;
    const rows = await listStats(db, { workspaceId, from: start, to: end, destinations: false, test });
    const buckets = Array.from({ length: count }, (_, i) => ({ start: start + i * step, counts: emptyCounts() }));
    for (const r of rows) {
      const bucket = buckets[Math.floor((r.hour - start) / step)];
      if (bucket && r.metric in bucket.counts) bucket.counts[r.metric as keyof typeof bucket.counts] += r.count;
    }
    return buckets;
  };

  return {
    async metrics(workspaceId, query) {
      if (query.email_id || query.broadcast_id)
        throw validationError(
          query.email_id ? 'email_id' : 'broadcast_id',
          'filtering by email or broadcast is not supported: metrics are counted per hour and sending domain',
        );
      const timeZone = query.timezone ?? 'UTC';
      let format: Intl.DateTimeFormat;
      try {
        format = new Intl.DateTimeFormat('en-CA', {
          timeZone,
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          hourCycle: 'h23',
        });
      } catch {
        throw validationError('timezone', `"${timeZone}" is not an IANA time zone`);
      }
      const granularity = query.granularity ?? 'daily';
      const end = query.end_date ? parseDate(query.end_date, 'end_date', true) : clock.now();
      const start = query.start_date ? parseDate(query.start_date, 'start_date', false) : end - 7 * DAY;
      if (start >= end) throw validationError('start_date', 'must be before end_date');
      if (end - start > MAX_RANGE_DAYS * DAY)
        throw validationError('start_date', `the range is at most ${MAX_RANGE_DAYS} days`);
      if (granularity === 'hourly' && end - start > MAX_HOURLY_DAYS * DAY)
        throw validationError('granularity', `hourly covers at most ${MAX_HOURLY_DAYS} days`);
      const requested = list(query.metrics);
      for (const m of requested) {
        if (UNAVAILABLE.has(m)) throw validationError('metrics', `${m} is not counted by mailsvc`);
        if (!isOneOf(METRICS, m))
          throw validationError('metrics', `unknown metric "${m}"; one of ${METRICS.join(', ')}`);
      }
      const wanted = (requested.length > 0 ? requested : [...METRICS]) as Metric[];
      const dimensions = list(query.dimensions);
      for (const d of dimensions)
        if (d !== 'period' && d !== 'domain')
          throw validationError('dimensions', `"${d}" is not supported; use period and/or domain`);
      const domains = await listDomains(db, workspaceId);
      const domainIds = list(query.domain_id);
      for (const id of domainIds)
        if (!domains.some((d) => d.id === id)) throw validationError('domain_id', `no domain ${id} in this workspace`);

      // Hours are the unit of storage: a range starting or ending mid-hour takes that whole hour.
      const rows = await listStats(db, {
        workspaceId,
        from: floorHour(start),
        to: end,
        domainIds,
        destinations: false,
      });
      const totals: Record<string, number> = {};
      const groups = new Map<string, { period?: string; domain_id?: string; counts: Record<string, number> }>();
      for (const r of rows) {
        totals[r.metric] = (totals[r.metric] ?? 0) + r.count;
        if (dimensions.length === 0) continue;
        const period = dimensions.includes('period') ? periodOf(r.hour, granularity, format, timeZone) : undefined;
        const domain = dimensions.includes('domain') ? r.domain_id : undefined;
        const key = `${period ?? ''} ${domain ?? ''}`;
        const group = groups.get(key) ?? {
          ...(period !== undefined ? { period } : {}),
          ...(domain !== undefined ? { domain_id: domain } : {}),
          counts: {},
        };
        group.counts[r.metric] = (group.counts[r.metric] ?? 0) + r.count;
        groups.set(key, group);
      }
      const names = new Map(domains.map((d) => [d.id, d.name]));
      const data =
        dimensions.length === 0
          ? undefined
          : [...groups.values()]
              .sort(
                (a, b) =>
                  (a.period ?? '').localeCompare(b.period ?? '') ||
                  (a.domain_id ?? '').localeCompare(b.domain_id ?? ''),
              )
              .map((g) => ({
                ...(g.period !== undefined ? { period: g.period } : {}),
                ...(g.domain_id !== undefined
                  ? { domain_id: g.domain_id, domain_name: names.get(g.domain_id) ?? '' }
                  : {}),
                ...withRates(g.counts, wanted),
              }));
      return {
        object: 'metrics',
        start_date: new Date(start).toISOString(),
        end_date: new Date(end).toISOString(),
        metrics: wanted,
        dimensions: dimensions as Array<'period' | 'domain'>,
        granularity,
        timezone: timeZone,
        totals: withRates(totals, wanted),
        ...(data ? { data } : {}),
      };
    },

    series,

    queueDepth: (workspaceId) => countQueueDepth(db, workspaceId),

    async destinations(workspaceId, days) {
      const end = floorHour(clock.now()) + HOUR;
      const rows = await listStats(db, { workspaceId, from: end - days * DAY, to: end, destinations: true });
      const classes: DomainClass[] = ['gmail', 'microsoft', 'yahoo', 'apple', 'other'];
      const out = Object.fromEntries(
        classes.map((c) => [c, { delivered: 0, deferred: 0, bounced: 0, failed: 0, delivery_rate: 0, bounce_rate: 0 }]),
      ) as DestinationStats;
      for (const r of rows) {
        const entry = out[r.destination as DomainClass];
        const outcome = r.metric.replace(/^attempt_/, '') as 'delivered' | 'deferred' | 'bounced' | 'failed';
        if (entry && outcome in entry) entry[outcome] += r.count;
      }
      for (const entry of Object.values(out)) {
        const finished = entry.delivered + entry.bounced + entry.failed;
        entry.delivery_rate = ratio(entry.delivered, finished);
        entry.bounce_rate = ratio(entry.bounced, finished);
      }
      return out;
    },
  };
}
