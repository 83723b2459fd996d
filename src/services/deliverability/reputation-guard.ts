import {
  BATCH,
  percent,
  reputationEvent,
  reputationView,
  type GuardThresholds,
  type ReputationView,
} from './reputation-rule.js';
import { notFound } from '../../shared/errors.js';
import { findDomainByIdOrName, listDomainNames, listDomains, type Domain } from '../../store/domains.js';
import { refreshEmailStatus } from '../../store/emails.js';
import {
  countHeldByDomain,
  findReputationState,
  listReputationStates,
  releaseHeldQueueItems,
  saveReputationState,
  type DomainReputation,
  type ReputationState,
} from '../../store/reputation.js';
import type { Db } from '../../store/infra/db.js';
import type { ServiceDeps } from '../deps.js';

export interface ReputationGuard {
  /** Computes every domain's rates and acts on them (the leader's periodic job). */
  list(workspaceId: string): Promise<ReputationView[]>;
  get(workspaceId: string, idOrName: string): Promise<ReputationView>;
  /** Releases a paused domain's held mail; its rates count only what happens from now on. */
  resume(workspaceId: string, idOrName: string): Promise<ReputationView & { released: number }>;
  /** Held rows and the guard's state, for /metrics. */
  snapshot(): Promise<
    Array<{
      workspace_id: string;
      domain: string;
      state: ReputationState;
      bounce_rate: number;
      complaint_rate: number;
      held: number;
    }>
  >;
}

/** The guard's use cases: views of the rule's state (reputation-rule.ts) and the operator's resume. */
export function createReputationGuard(deps: ServiceDeps): ReputationGuard {
  const { db, clock, config } = deps;
  const log = deps.logger.child({ component: 'reputation-guard' });
  const t: GuardThresholds = config.deliverability.guard;

  const view = (domain: Domain, row: DomainReputation | undefined, held: number) =>
    reputationView(domain, row, held, t);

  const find = async (workspaceId: string, idOrName: string): Promise<Domain> => {
    const domain = await findDomainByIdOrName(db, workspaceId, idOrName);
    if (!domain) throw notFound(`Domain ${idOrName}`);
    return domain;
  };

  const domainEvent = (trx: Db, domain: Domain, row: DomainReputation, held: number) =>
    reputationEvent(trx, domain, row, held, t);

  return {
    async list(workspaceId) {
      const [domains, states, held] = await Promise.all([
        listDomains(db, workspaceId),
        listReputationStates(db, workspaceId),
        countHeldByDomain(db, workspaceId),
      ]);
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
      const row: DomainReputation = {
        domain_id: domain.id,
        workspace_id: domain.workspace_id,
        state: 'sending',
        accepted: 0,
        bounces: 0,
        hard_bounces: 0,
        complaints: 0,
        tracked: 0,
        opened: 0,
        human_opened: 0,
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

    async snapshot() {
      const [states, held, names] = await Promise.all([
        listReputationStates(db),
        countHeldByDomain(db),
        listDomainNames(db),
      ]);
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
