import type { Config } from '../../config/schema.js';
import { holdWaiting, judge, reputationEvent, type GuardThresholds } from './reputation-rule.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Db, Dialect } from '../../store/infra/db.js';
import { findDomainById } from '../../store/domains.js';
import {
  countDomainEngagement,
  countDomainOutcomes,
  listReputationStates,
  saveReputationState,
  type DomainReputation,
} from '../../store/reputation.js';

/**
 * A periodic task (the reputation guard's round): per sending domain, the rolling hard-bounce
 * and complaint rates of its live mail are judged against the thresholds; a domain over the
 * pause thresholds has its waiting marketing mail held (delivery holds what is claimed later),
 * with `domain.updated`. Only an operator ends a pause (services/deliverability/
 * services/deliverability/reputation-guard.ts resumes).
 */
export async function evaluateReputation(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  config: Config;
  logger: Logger;
}): Promise<void> {
  const { db, dialect, clock } = deps;
  const t: GuardThresholds = deps.config.deliverability.guard;
  const log = deps.logger.child({ component: 'reputation-guard' });
  const now = clock.now();
  const since = now - t.windowHours * 3600_000;
  const [counts, engagement] = await Promise.all([
    countDomainOutcomes(db, dialect, since),
    countDomainEngagement(db, dialect, since),
  ]);
  const byDomain = new Map(counts.map((c) => [c.domain_id, c]));
  const engaged = new Map(engagement.map((e) => [e.domain_id, e]));
  const states = new Map((await listReputationStates(db)).map((s) => [s.domain_id, s]));
  for (const domainId of new Set([...byDomain.keys(), ...states.keys()])) {
    const previous = states.get(domainId);
    const c = byDomain.get(domainId) ?? {
      workspace_id: previous!.workspace_id,
      domain_id: domainId,
      accepted: 0,
      bounces: 0,
      hard_bounces: 0,
      complaints: 0,
    };
    const e = engaged.get(domainId) ?? { tracked: 0, opened: 0, human_opened: 0 };
    const verdict = judge({ ...c, ...e }, t);
    // Only an operator ends a pause: the rates fall as the window moves on, the list stays bad.
    const state = previous?.state === 'paused' ? 'paused' : verdict.state;
    const changed = state !== (previous?.state ?? 'sending');
    const row: DomainReputation = {
      domain_id: domainId,
      workspace_id: c.workspace_id,
      state,
      accepted: c.accepted,
      bounces: c.bounces,
      hard_bounces: c.hard_bounces,
      complaints: c.complaints,
      tracked: e.tracked,
      opened: e.opened,
      human_opened: e.human_opened,
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
    const domain = await findDomainById(db, domainId);
    if (!domain) continue;
    await db.transaction().execute(async (trx) => {
      await saveReputationState(trx, row);
      await reputationEvent(trx, domain, row, 0, t);
    });
    const fields = {
      domainId,
      workspaceId: domain.workspace_id,
      domain: domain.name,
      state,
      bounceRate: verdict.bounceRate,
      complaintRate: verdict.complaintRate,
      sent: row.accepted + row.bounces,
    };
    if (state === 'paused') {
      const held = await holdWaiting(db, clock, domain, row.reason ?? 'paused');
      log.warn({ ...fields, held }, 'reputation guard paused marketing mail');
    } else log.info(fields, 'reputation state changed');
  }
}
