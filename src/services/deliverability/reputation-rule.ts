import { recordHeld } from '../../delivery/hold-paused.js';
import { recordEvent } from '../../events/record-event.js';
import type { Clock } from '../../shared/clock.js';
import { toIsoOrNull } from '../../shared/clock.js';
import type { Db } from '../../store/infra/db.js';
import {
  holdWaitingMarketing,
  type DomainEngagement,
  type DomainOutcomeCounts,
  type DomainReputation,
  type ReputationState,
} from '../../store/reputation.js';
import type { Domain } from '../../store/domains.js';
import type { CheckStatus } from '../../checks/check-status.js';

/**
 * The reputation guard's rule, shared by its evaluation (reputation-round.ts, time-driven)
 * and its views (services/deliverability/reputation-guard.ts). Per sending domain (of a workspace), rolling hard-bounce and
 * complaint rates of its live mail, from our own events. Above the warning thresholds the
 * domain is in `warning`; above the pause thresholds its marketing mail is held: waiting rows
 * become `held` (with an `email.held` event), and rows claimed later are held by the
 * delivery step `pausedDomainHold` (delivery/hold-paused.ts) instead of being sent. Transactional mail is never held. Only an
 * operator resumes a paused domain (API, CLI, dashboard): held mail is released and the rates
 * start again from that moment, so the mail that caused the pause does not pause it again.
 */

export interface GuardThresholds {
  windowHours: number;
  minimumSent: number;
  bounceWarning: number;
  bouncePause: number;
  complaintWarning: number;
  complaintPause: number;
  /** Percent of tracked marketing messages opened by people below which a domain is in warning (0: off). */
  engagementWarning: number;
}

interface RateView {
  /** Percent, two decimals. */
  rate: number;
  status: CheckStatus;
  warning: number;
  pause: number;
}

export interface ReputationView {
  domain_id: string;
  domain_name: string;
  state: ReputationState;
  reason: string;
  window_hours: number;
  /** Messages with a final answer from the recipient's server: accepted plus bounced. */
  sent: number;
  hard_bounces: number;
  complaints: number;
  bounce: RateView;
  complaint: RateView;
  /** People's opens of the tracked marketing mail delivered in the window: machines' are shown, never counted. */
  engagement: EngagementView;
  /** Recipients of marketing mail waiting, held. */
  held: number;
  evaluated_at: string | null;
  paused_at: string | null;
  resumed_at: string | null;
}

interface EngagementView {
  /** Tracked marketing messages delivered in the window. */
  tracked: number;
  /** Of them, opened by a person (an image proxy's open is a person's). */
  human_opened: number;
  /** Opened by machines only: Apple Mail Privacy Protection's prefetch, scanners. */
  machine_opened: number;
  /** Percent of `tracked` opened by people, two decimals. */
  rate: number;
  /** `warning` under the threshold; never `failing`: low engagement warns, it never holds mail. */
  status: CheckStatus;
  warning: number;
}

/** Rows held or released per transaction: bounded, so a pause of a large campaign never holds long locks. */
export const BATCH = 500;

export const percent = (part: number, whole: number): number =>
  whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 100;

interface Judgement {
  state: ReputationState;
  reason: string;
  bounceRate: number;
  complaintRate: number;
}

type Engagement = Pick<DomainEngagement, 'tracked' | 'opened' | 'human_opened'>;

/**
 * What the rates say, for a domain not already paused. Pure. Bounces and complaints may pause;
 * people's opens only warn: opens cannot be seen for every reader, and Apple's prefetch and
 * scanners are left out, so a list can read low without being bad.
 */
export function judge(
  counts: Pick<DomainOutcomeCounts, 'accepted' | 'bounces' | 'hard_bounces' | 'complaints'> & Partial<Engagement>,
  t: GuardThresholds,
): Judgement {
  const sent = counts.accepted + counts.bounces;
  const bounceRate = percent(counts.hard_bounces, sent);
  const complaintRate = percent(counts.complaints, counts.accepted);
  if (sent < t.minimumSent) {
    return {
      state: 'sending',
      reason: `${sent} of the ${t.minimumSent} messages needed to judge the rates`,
      bounceRate,
      complaintRate,
    };
  }
  if (bounceRate > t.bouncePause)
    return {
      state: 'paused',
      reason: `hard-bounce rate ${bounceRate}% is over ${t.bouncePause}%: marketing mail is held; clean the list, then resume`,
      bounceRate,
      complaintRate,
    };
  if (complaintRate > t.complaintPause) {
    return {
      state: 'paused',
      reason: `complaint rate ${complaintRate}% is over ${t.complaintPause}%: marketing mail is held; check consent and unsubscribe links, then resume`,
      bounceRate,
      complaintRate,
    };
  }
  if (bounceRate > t.bounceWarning)
    return {
      state: 'warning',
      reason: `hard-bounce rate ${bounceRate}% is over ${t.bounceWarning}% (marketing is held above ${t.bouncePause}%)`,
      bounceRate,
      complaintRate,
    };
  if (complaintRate > t.complaintWarning) {
    return {
      state: 'warning',
      reason: `complaint rate ${complaintRate}% is over ${t.complaintWarning}% (marketing is held above ${t.complaintPause}%)`,
      bounceRate,
      complaintRate,
    };
  }
  const tracked = counts.tracked ?? 0;
  const people = percent(counts.human_opened ?? 0, tracked);
  if (t.engagementWarning > 0 && tracked >= t.minimumSent && people < t.engagementWarning) {
    const machines = (counts.opened ?? 0) - (counts.human_opened ?? 0);
    return {
      state: 'warning',
      reason: `people opened ${people}% of ${tracked} tracked marketing messages, under ${t.engagementWarning}%${machines > 0 ? ` (${machines} more were opened by machines only: Apple's prefetch or scanners, not counted)` : ''}: check the list's consent and the content`,
      bounceRate,
      complaintRate,
    };
  }
  return { state: 'sending', reason: 'rates are within the thresholds', bounceRate, complaintRate };
}

const rateStatus = (rate: number, warning: number, pause: number): CheckStatus =>
  rate > pause ? 'failing' : rate > warning ? 'warning' : 'ok';

/** A domain's reputation as the API, the dashboard and `domain.updated` show it. */
export function reputationView(
  domain: Domain,
  row: DomainReputation | undefined,
  held: number,
  t: GuardThresholds,
): ReputationView {
  const accepted = row?.accepted ?? 0;
  const sent = accepted + (row?.bounces ?? 0);
  const bounceRate = percent(row?.hard_bounces ?? 0, sent);
  const complaintRate = percent(row?.complaints ?? 0, accepted);
  return {
    domain_id: domain.id,
    domain_name: domain.name,
    state: row?.state ?? 'sending',
    reason: row?.reason ?? 'not evaluated yet',
    window_hours: t.windowHours,
    sent,
    hard_bounces: row?.hard_bounces ?? 0,
    complaints: row?.complaints ?? 0,
    bounce: {
      rate: bounceRate,
      status: rateStatus(bounceRate, t.bounceWarning, t.bouncePause),
      warning: t.bounceWarning,
      pause: t.bouncePause,
    },
    complaint: {
      rate: complaintRate,
      status: rateStatus(complaintRate, t.complaintWarning, t.complaintPause),
      warning: t.complaintWarning,
      pause: t.complaintPause,
    },
    engagement: engagementView(row, t),
    held,
    evaluated_at: toIsoOrNull(row?.evaluated_at ?? null),
    paused_at: toIsoOrNull(row?.paused_at ?? null),
    resumed_at: toIsoOrNull(row?.resumed_at ?? null),
  };
}

function engagementView(row: DomainReputation | undefined, t: GuardThresholds): EngagementView {
  const tracked = row?.tracked ?? 0;
  const human = row?.human_opened ?? 0;
  const rate = percent(human, tracked);
  const judged = t.engagementWarning > 0 && tracked >= t.minimumSent;
  return {
    tracked,
    human_opened: human,
    machine_opened: (row?.opened ?? 0) - human,
    rate,
    status: judged && rate < t.engagementWarning ? 'warning' : 'ok',
    warning: t.engagementWarning,
  };
}

/** `domain.updated` with the domain's reputation, in the caller's transaction. */
export const reputationEvent = (trx: Db, domain: Domain, row: DomainReputation, held: number, t: GuardThresholds) =>
  recordEvent(trx, {
    workspaceId: domain.workspace_id,
    type: 'domain.updated',
    at: row.changed_at,
    data: {
      id: domain.id,
      name: domain.name,
      status: domain.status,
      created_at: new Date(domain.created_at).toISOString(),
      reputation: reputationView(domain, row, held, t),
    },
  });

/** Holds every waiting marketing row of a paused domain, in bounded transactions. */
export async function holdWaiting(db: Db, clock: Clock, domain: Domain, reason: string): Promise<number> {
  let total = 0;
  for (;;) {
    const now = clock.now();
    const n = await db.transaction().execute(async (trx) => {
      const rows = await holdWaitingMarketing(trx, domain.id, now, BATCH);
      await recordHeld(trx, rows, reason, now);
      return rows.length;
    });
    total += n;
    if (n < BATCH) return total;
  }
}
