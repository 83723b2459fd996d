import { randomBytes } from 'node:crypto';
import { toIso } from '../../shared/clock.js';
import { isNoRecordError } from '../../shared/dns.js';
import { normalizeDomain } from '../../shared/domain-name.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import {
  findDomainClaim,
  findLatestDomainClaim,
  hasEmailsSince,
  hasUnfinishedEmails,
  saveDomainClaim,
  supersedeDomainClaims,
  updateDomainClaim,
  type DomainClaim,
} from '../../store/domain-claims.js';
import { listDomainsNamed } from '../../store/domains.js';
import type { ServiceDeps } from '../deps.js';
import type { DomainService, DomainSettingsInput } from './domains.js';

/**
 * A workspace takes over a domain that other workspaces hold (Resend's `domains.claims`): it
 * publishes `TXT _mailsvc-claim.<domain> "mailsvc-claim=<token>"`, and `verify` looks it up.
 * A claim is blocked while a holder still has mail of the domain to deliver
 * (`pending_scheduled_emails`) or sent from it within the last day (`recent_owner_activity`);
 * `verify` can be called again once that is over. When it goes through, the domain (with its
 * keys and receiving routes) leaves every other workspace, and the claimant has it, to be
 * verified with its own DKIM records. A claim expires after 7 days.
 */

const CLAIM_TTL_MS = 7 * 24 * 3600 * 1000;
const OWNER_ACTIVITY_MS = 24 * 3600 * 1000;
const RECORD_PREFIX = '_mailsvc-claim';

interface DomainClaimView {
  object: 'domain_claim';
  id: string;
  name: string;
  status: DomainClaim['status'];
  domain_id: string | null;
  region: 'self-hosted';
  record: { type: 'TXT'; name: string; value: string; ttl: 'Auto' };
  blocked_reason: DomainClaim['blocked_reason'];
  failure_reason: string | null;
  created_at: string;
  expires_at: string;
}

export interface DomainClaimService {
  create(workspaceId: string, input: { name?: unknown } & DomainSettingsInput): Promise<DomainClaimView>;
  /** By claim id, domain name, or the id of the domain a completed claim gave. */
  get(workspaceId: string, ref: string): Promise<DomainClaimView>;
  verify(workspaceId: string, ref: string): Promise<DomainClaimView>;
}

const view = (c: DomainClaim): DomainClaimView => ({
  object: 'domain_claim',
  id: c.id,
  name: c.name,
  status: c.status,
  domain_id: c.domain_id,
  region: 'self-hosted',
  record: { type: 'TXT', name: `${RECORD_PREFIX}.${c.name}`, value: `mailsvc-claim=${c.token}`, ttl: 'Auto' },
  blocked_reason: c.blocked_reason,
  failure_reason: c.failure_reason,
  created_at: toIso(c.created_at),
  expires_at: toIso(c.expires_at),
});

export function createDomainClaimService(deps: ServiceDeps & { domains: DomainService }): DomainClaimService {
  const { db, clock, resolver, domains } = deps;

  const find = async (workspaceId: string, ref: string): Promise<DomainClaim> => {
    const byId = isUuid(ref) ? await findDomainClaim(db, workspaceId, ref.toLowerCase()) : undefined;
    const found =
      byId ??
      (await findLatestDomainClaim(db, workspaceId, isUuid(ref) ? ref.toLowerCase() : (normalizeDomain(ref) ?? ref)));
    if (!found) throw notFound(`Domain claim ${ref}`);
    return found;
  };

  const current = async (claim: DomainClaim): Promise<DomainClaim> => {
    if ((claim.status === 'pending' || claim.status === 'blocked') && claim.expires_at <= clock.now()) {
      await updateDomainClaim(db, claim.id, { status: 'expired', blocked_reason: null });
      return { ...claim, status: 'expired', blocked_reason: null };
    }
    return claim;
  };

  /** What the TXT record says, or why it cannot be read. */
  const proves = async (claim: DomainClaim): Promise<string | null> => {
    const name = `${RECORD_PREFIX}.${claim.name}`;
    try {
      const txt = (await resolver.resolveTxt(name)).map((parts) => parts.join(''));
      return txt.includes(`mailsvc-claim=${claim.token}`)
        ? null
        : `the TXT record at ${name} does not hold mailsvc-claim=${claim.token}`;
    } catch (err) {
      return isNoRecordError(err) ? `no TXT record at ${name}` : `DNS error for ${name}: ${(err as Error).message}`;
    }
  };

  return {
    async create(workspaceId, input) {
      const name = typeof input.name === 'string' ? normalizeDomain(input.name) : null;
      if (!name) throw validationError('name', 'is required: a domain name such as example.com');
      const holders = (await listDomainsNamed(db, name)).filter((d) => d.workspace_id !== workspaceId);
      if (holders.length === 0)
        throw validationError('name', `${name} is held by no other workspace: add it with POST /v1/domains`);
      const { open_tracking, click_tracking, tls, custom_return_path, tracking_subdomain } = input;
      const settings = { open_tracking, click_tracking, tls, custom_return_path, tracking_subdomain };
      const now = clock.now();
      const claim: DomainClaim = {
        id: newId(),
        workspace_id: workspaceId,
        name,
        token: randomBytes(24).toString('base64url'),
        status: 'pending',
        domain_id: null,
        blocked_reason: null,
        failure_reason: null,
        settings: Object.values(settings).some((v) => v !== undefined) ? settings : null,
        created_at: now,
        expires_at: now + CLAIM_TTL_MS,
      };
      await db.transaction().execute(async (trx) => {
        await supersedeDomainClaims(trx, workspaceId, name);
        await saveDomainClaim(trx, claim);
      });
      return view(claim);
    },

    get: async (workspaceId, ref) => view(await current(await find(workspaceId, ref))),

    async verify(workspaceId, ref) {
      const claim = await current(await find(workspaceId, ref));
      if (claim.status !== 'pending' && claim.status !== 'blocked') {
        if (claim.status === 'completed') return view(claim);
        throw new AppError('invalid_state', `Claim ${claim.id} is ${claim.status}: make a new claim`);
      }
      const failure = await proves(claim);
      if (failure) {
        await updateDomainClaim(db, claim.id, { failure_reason: failure });
        return view({ ...claim, failure_reason: failure });
      }
      const holders = (await listDomainsNamed(db, claim.name)).filter((d) => d.workspace_id !== workspaceId);
      const holderIds = holders.map((d) => d.id);
      const now = clock.now();
      const blocked = (await hasUnfinishedEmails(db, holderIds))
        ? ('pending_scheduled_emails' as const)
        : (await hasEmailsSince(db, holderIds, now - OWNER_ACTIVITY_MS))
          ? ('recent_owner_activity' as const)
          : null;
      if (blocked) {
        await updateDomainClaim(db, claim.id, { status: 'blocked', blocked_reason: blocked, failure_reason: null });
        return view({ ...claim, status: 'blocked', blocked_reason: blocked, failure_reason: null });
      }
      for (const d of holders) await domains.remove(d.workspace_id, d.id);
      const own = (await listDomainsNamed(db, claim.name)).find((d) => d.workspace_id === workspaceId);
      const domainId = own?.id ?? (await domains.add(workspaceId, { domain: claim.name })).id;
      if (claim.settings) await domains.update(workspaceId, domainId, claim.settings);
      const done = { status: 'completed' as const, domain_id: domainId, blocked_reason: null, failure_reason: null };
      await updateDomainClaim(db, claim.id, done);
      return view({ ...claim, ...done });
    },
  };
}
