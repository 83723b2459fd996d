import { recipientEventData } from '../../delivery/event-data.js';
import { recordEvent } from '../../events/record-event.js';
import { toIsoOrNull } from '../../shared/clock.js';
import { notFound } from '../../shared/errors.js';
import { findDomainByIdOrName, listDomains } from '../../store/domains.js';
import { listEmailsByIds, refreshEmailStatus } from '../../store/emails.js';
import {
  countDomainOutcomes,
  countHeldByDomain,
  findReputationState,
  holdClaimedQueueItems,
  holdWaitingMarketing,
  listPausedDomainIds,
  listReputationStates,
  releaseHeldQueueItems,
  saveReputationState,
  type DomainOutcomeCounts,
} from '../../store/reputation.js';
import type { Db } from '../../store/db.js';
import type { Domain, Email, QueueItem, ReputationState, ReputationStateRow } from '../../store/tables.js';
import type { ServiceDeps } from '../deps.js';
import type { CheckStatus } from './check-status.js';

/**
 * The reputation guard. Per sending domain (of a workspace), rolling hard-bounce and
 * complaint rates of its live mail, from our own events. Above the warning thresholds the
 * domain is in `warning`; above the pause thresholds its marketing mail is held: waiting rows
 * become `held` (with an `email.held` event), and rows claimed later are held by the
 * delivery step `holdClaimed` instead of being sent. Transactional mail is never held. Only an
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
}

export interface RateView {
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
  /** Recipients of marketing mail waiting, held. */
  held: number;
  evaluated_at: string | null;
  paused_at: string | null;
  resumed_at: string | null;
}

export interface ReputationGuard {
  /** Computes every domain's rates and acts on them (the leader's periodic job). */
  evaluate(): Promise<void>;
  list(workspaceId: string): Promise<ReputationView[]>;
  get(workspaceId: string, idOrName: string): Promise<ReputationView>;
  /** Releases a paused domain's held mail; its rates count only what happens from now on. */
  resume(workspaceId: string, idOrName: string): Promise<ReputationView & { released: number }>;
  /**
   * The delivery step: of rows just claimed, holds the marketing mail of paused domains and
   * returns the rows still to deliver.
   */
  holdClaimed(owner: string, items: QueueItem[], emails: Map<string, Email>): Promise<QueueItem[]>;
  /** Held rows and the guard's state, for /metrics. */
  snapshot(): Promise<Array<{ workspace_id: string; domain: string; state: ReputationState; bounce_rate: number; complaint_rate: number; held: number }>>;
}

/** Rows held or released per transaction: bounded, so a pause of a large campaign never holds long locks. */
const BATCH = 500;
/** How long the delivery step trusts its list of paused domains (the leader may pause one at any time). */
const PAUSED_CACHE_MS = 1000;

const percent = (part: number, whole: number): number => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 100);

export interface Judgement {
  state: ReputationState;
  reason: string;
  bounceRate: number;
  complaintRate: number;
}

/** What the rates say, for a domain not already paused. Pure. */
export function judge(counts: Pick<DomainOutcomeCounts, 'accepted' | 'bounces' | 'hard_bounces' | 'complaints'>, t: GuardThresholds): Judgement {
  const sent = counts.accepted + counts.bounces;
  const bounceRate = percent(counts.hard_bounces, sent);
  const complaintRate = percent(counts.complaints, counts.accepted);
  if (sent < t.minimumSent) {
    return { state: 'sending', reason: `${sent} of the ${t.minimumSent} messages needed to judge the rates`, bounceRate, complaintRate };
  }
  if (bounceRate > t.bouncePause) return { state: 'paused', reason: `hard-bounce rate ${bounceRate}% is over ${t.bouncePause}%: marketing mail is held; clean the list, then resume`, bounceRate, complaintRate };
  if (complaintRate > t.complaintPause) {
    return { state: 'paused', reason: `complaint rate ${complaintRate}% is over ${t.complaintPause}%: marketing mail is held; check consent and unsubscribe links, then resume`, bounceRate, complaintRate };
  }
  if (bounceRate > t.bounceWarning) return { state: 'warning', reason: `hard-bounce rate ${bounceRate}% is over ${t.bounceWarning}% (marketing is held above ${t.bouncePause}%)`, bounceRate, complaintRate };
  if (complaintRate > t.complaintWarning) {
    return { state: 'warning', reason: `complaint rate ${complaintRate}% is over ${t.complaintWarning}% (marketing is held above ${t.complaintPause}%)`, bounceRate, complaintRate };
  }
  return { state: 'sending', reason: 'rates are within the thresholds', bounceRate, complaintRate };
}

const rateStatus = (rate: number, warning: number, pause: number): CheckStatus => (rate > pause ? 'failing' : rate > warning ? 'warning' : 'ok');

export function createReputationGuard(deps: ServiceDeps): ReputationGuard {
  const { db, dialect, clock, config } = deps;
  const log = deps.logger.child({ component: 'reputation-guard' });
  const t: GuardThresholds = config.deliverability.guard;
  let paused: { until: number; ids: Set<string> } | null = null;

  const view = (domain: Domain, row: ReputationStateRow | undefined, held: number): ReputationView => {
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
      bounce: { rate: bounceRate, status: rateStatus(bounceRate, t.bounceWarning, t.bouncePause), warning: t.bounceWarning, pause: t.bouncePause },
      complaint: { rate: complaintRate, status: rateStatus(complaintRate, t.complaintWarning, t.complaintPause), warning: t.complaintWarning, pause: t.complaintPause },
      held,
      evaluated_at: toIsoOrNull(row?.evaluated_at ?? null),
      paused_at: toIsoOrNull(row?.paused_at ?? null),
      resumed_at: toIsoOrNull(row?.resumed_at ?? null),
    };
  };

  const find = async (workspaceId: string, idOrName: string): Promise<Domain> => {
    const domain = await findDomainByIdOrName(db, workspaceId, idOrName);
    if (!domain) throw notFound(`Domain ${idOrName}`);
    return domain;
  };

  const domainEvent = (trx: Db, domain: Domain, row: ReputationStateRow, held: number) =>
    recordEvent(trx, {
      workspaceId: domain.workspace_id,
      type: 'domain.updated',
      at: row.changed_at,
      data: { id: domain.id, name: domain.name, status: domain.status, created_at: new Date(domain.created_at).toISOString(), reputation: view(domain, row, held) },
    });

  /** `email.held` for each email that had rows held, and its new status; in the caller's transaction. */
  const recordHeld = async (trx: Db, rows: Array<{ email_id: string; recipient: string }>, reason: string, now: number) => {
    const emails = new Map((await listEmailsByIds(trx, [...new Set(rows.map((r) => r.email_id))])).map((e) => [e.id, e]));
    for (const [emailId, email] of emails) {
      const recipients = rows.filter((r) => r.email_id === emailId).map((r) => r.recipient);
      await refreshEmailStatus(trx, emailId, now);
      await recordEvent(trx, {
        workspaceId: email.workspace_id,
        type: 'email.held',
        emailId,
        at: now,
        data: { ...recipientEventData(email, recipients[0]!, now), to: recipients, held: { reason, domain_id: email.domain_id } },
      });
    }
  };

  /** Holds every waiting marketing row of a paused domain, in bounded transactions. */
  const holdWaiting = async (domain: Domain, reason: string) => {
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
  };

  const pausedDomainIds = async (): Promise<Set<string>> => {
    const now = clock.now();
    if (!paused || paused.until <= now) paused = { until: now + PAUSED_CACHE_MS, ids: new Set(await listPausedDomainIds(db)) };
    return paused.ids;
  };

  return {
    async evaluate() {
      const now = clock.now();
      const counts = await countDomainOutcomes(db, dialect, now - t.windowHours * 3600_000);
      const byDomain = new Map(counts.map((c) => [c.domain_id, c]));
      const states = new Map((await listReputationStates(db)).map((s) => [s.domain_id, s]));
      for (const domainId of new Set([...byDomain.keys(), ...states.keys()])) {
        const previous = states.get(domainId);
        const c = byDomain.get(domainId) ?? { workspace_id: previous!.workspace_id, domain_id: domainId, accepted: 0, bounces: 0, hard_bounces: 0, complaints: 0 };
        const verdict = judge(c, t);
        // Only an operator ends a pause: the rates fall as the window moves on, the list stays bad.
        const state = previous?.state === 'paused' ? 'paused' : verdict.state;
        const changed = state !== (previous?.state ?? 'sending');
        const row: ReputationStateRow = {
          domain_id: domainId,
          workspace_id: c.workspace_id,
          state,
          accepted: c.accepted,
          bounces: c.bounces,
          hard_bounces: c.hard_bounces,
          complaints: c.complaints,
          reason: state === 'paused' && previous?.state === 'paused' ? previous.reason : verdict.reason,
          evaluated_at: now,
          changed_at: changed ? now : (previous?.changed_at ?? now),
          paused_at: state === 'paused' ? (previous?.paused_at ?? now) : null,
          resumed_at: previous?.resumed_at ?? null,
        };
        if (!changed) {
          await saveReputationState(db, row);
          continue;
        }
        const domain = await db.selectFrom('domains').selectAll().where('id', '=', domainId).executeTakeFirst();
        if (!domain) continue;
        await db.transaction().execute(async (trx) => {
          await saveReputationState(trx, row);
          await domainEvent(trx, domain, row, 0);
        });
        paused = null;
        const fields = { domainId, workspaceId: domain.workspace_id, domain: domain.name, state, bounceRate: verdict.bounceRate, complaintRate: verdict.complaintRate, sent: row.accepted + row.bounces };
        if (state === 'paused') {
          const held = await holdWaiting(domain, row.reason ?? 'paused');
          log.warn({ ...fields, held }, 'reputation guard paused marketing mail');
        } else log.info(fields, 'reputation state changed');
      }
    },

    async list(workspaceId) {
      const [domains, states, held] = await Promise.all([listDomains(db, workspaceId), listReputationStates(db, workspaceId), countHeldByDomain(db, workspaceId)]);
      const byId = new Map(states.map((s) => [s.domain_id, s]));
      return domains.map((d) => view(d, byId.get(d.id), held.get(d.id) ?? 0));
    },

    async get(workspaceId, idOrName) {
      const domain = await find(workspaceId, idOrName);
      const [row, held] = await Promise.all([findReputationState(db, domain.id), countHeldByDomain(db, workspaceId)]);
      return view(domain, row, held.get(domain.id) ?? 0);
    },

    async resume(workspaceId, idOrName) {
      const domain = await find(workspaceId, idOrName);
      const now = clock.now();
      const previous = await findReputationState(db, domain.id);
      const row: ReputationStateRow = {
        domain_id: domain.id,
        workspace_id: domain.workspace_id,
        state: 'sending',
        accepted: 0,
        bounces: 0,
        hard_bounces: 0,
        complaints: 0,
        reason: 'resumed by an operator: rates count from now on',
        evaluated_at: now,
        changed_at: previous?.state === 'sending' ? previous.changed_at : now,
        paused_at: null,
        resumed_at: now,
      };
      await db.transaction().execute(async (trx) => {
        await saveReputationState(trx, row);
        if (previous && previous.state !== 'sending') await domainEvent(trx, domain, row, 0);
      });
      paused = null;
      // Release in bounded transactions; the state is `sending` already, so nothing new is held.
      let released = 0;
      for (;;) {
        const n = await db.transaction().execute(async (trx) => {
          const emailIds = await releaseHeldQueueItems(trx, domain.id, clock.now(), BATCH);
          for (const id of new Set(emailIds)) await refreshEmailStatus(trx, id, clock.now());
          return emailIds.length;
        });
        released += n;
        if (n < BATCH) break;
      }
      log.info({ domainId: domain.id, workspaceId, domain: domain.name, released }, 'reputation guard resumed');
      return { ...view(domain, row, 0), released };
    },

    async holdClaimed(owner, items, emails) {
      const ids = await pausedDomainIds();
      if (ids.size === 0) return items;
      const toHold = items.filter((item) => {
        const email = emails.get(item.email_id);
        return email !== undefined && email.type === 'marketing' && email.test === 0 && email.domain_id !== null && ids.has(email.domain_id);
      });
      if (toHold.length === 0) return items;
      const now = clock.now();
      const held = new Set(
        await db.transaction().execute(async (trx) => {
          const heldIds = await holdClaimedQueueItems(trx, owner, toHold.map((i) => i.id), now);
          const rows = toHold.filter((i) => heldIds.includes(i.id));
          await recordHeld(trx, rows, 'the reputation guard paused marketing mail of this domain', now);
          return heldIds;
        }),
      );
      log.info({ held: held.size }, 'held marketing mail of paused domains');
      return items.filter((i) => !held.has(i.id));
    },

    async snapshot() {
      const [states, held] = await Promise.all([listReputationStates(db), countHeldByDomain(db)]);
      const names = new Map((await db.selectFrom('domains').select(['id', 'name']).execute()).map((d) => [d.id, d.name]));
      return states.map((s) => ({
        workspace_id: s.workspace_id,
        domain: names.get(s.domain_id) ?? s.domain_id,
        state: s.state,
        bounce_rate: percent(s.hard_bounces, s.accepted + s.bounces),
        complaint_rate: percent(s.complaints, s.accepted),
        held: held.get(s.domain_id) ?? 0,
      }));
    },
  };
}
