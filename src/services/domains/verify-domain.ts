import { isNoRecordError } from '../../shared/dns.js';
import { recordEvent } from '../../events/record-event.js';
import { domainChecksOf } from '../../checks/domain-checks.js';
import { checkChanges, createDomainHealth } from '../../checks/domain-health.js';
import { listDkimKeys, updateDomain, type DkimKey, type Domain } from '../../store/domains.js';
import type { ServiceDeps } from '../deps.js';
import type { DomainRecords, DomainView, VerificationCheck, VerificationResult } from './domain-records.js';

/**
 * Checks a domain's DNS now: each DKIM token (the owner's CNAME points at our host, which
 * publishes the matching key; the domain becomes verified when all do) and every
 * deliverability check; records the result and, when something changed, `domain.updated`.
 */

/** Parses `k=v; k=v` DKIM key records; keys lower-cased, whitespace removed from values (RFC 6376 §3.6.1). */
function parseTagList(text: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ''));
  }
  return tags;
}

const sameName = (a: string, b: string): boolean =>
  a.replace(/\.$/, '').toLowerCase() === b.replace(/\.$/, '').toLowerCase();

export function domainVerifier(
  deps: ServiceDeps,
  records: DomainRecords,
): (domain: Domain) => Promise<VerificationResult> {
  const { db, clock, resolver, logger } = deps;
  const { cnameRecord, returnPathSubdomainOf, view } = records;
  const health = createDomainHealth(deps);

  /** Checks one token: the customer's CNAME points at our host, and our host publishes the matching key. */
  const checkToken = async (domain: Domain, key: DkimKey): Promise<VerificationCheck> => {
    const record = cnameRecord(domain.name, key.selector);
    const fail = (error: string): VerificationCheck => ({ record, ok: false, error });
    let targets: string[];
    try {
      targets = await resolver.resolveCname(record.name);
    } catch (err) {
      return fail(
        isNoRecordError(err)
          ? `no CNAME record at ${record.name}`
          : `DNS error for ${record.name}: ${(err as Error).message}`,
      );
    }
    if (!targets.some((t) => sameName(t, record.value))) {
      return fail(`CNAME ${record.name} points to ${targets.join(', ')}, expected ${record.value}`);
    }
    let txt: string[][];
    try {
      txt = await resolver.resolveTxt(record.value);
    } catch (err) {
      return fail(
        isNoRecordError(err)
          ? `no DKIM key published at ${record.value}`
          : `DNS error for ${record.value}: ${(err as Error).message}`,
      );
    }
    const published = txt.map((chunks) => parseTagList(chunks.join(''))).find((tags) => tags.has('p'));
    if (!published) return fail(`no DKIM key (p=) in the TXT record at ${record.value}`);
    if (published.get('p') !== key.public_key)
      return fail(`the DKIM key published at ${record.value} does not match this domain's key`);
    return { record, ok: true, error: null };
  };

  return async (domain: Domain): Promise<VerificationResult> => {
    const keys = await listDkimKeys(db, [domain.id]);
    const checks = await Promise.all(keys.map((k) => checkToken(domain, k)));
    const deliverability = await health.run(domain.name, checks, returnPathSubdomainOf(domain));
    const failures = checks.filter((c) => !c.ok).map((c) => c.error);
    const now = clock.now();
    // A verified domain stays verified when a later check fails: flipping it would stop all
    // of its mail at once. The failure is recorded for the user to see.
    const verifiedNow = failures.length === 0 && checks.length > 0;
    const changes = {
      last_checked_at: now,
      last_check_error: failures.length > 0 ? failures.join('; ') : null,
      checks: deliverability,
      ...(verifiedNow && domain.status !== 'verified' ? { status: 'verified' as const, verified_at: now } : {}),
    };
    const updated = view({ ...domain, ...changes }, keys);
    const changed = checkChanges(domainChecksOf(domain), deliverability);
    await db.transaction().execute(async (trx) => {
      await updateDomain(trx, domain.id, changes);
      if (changed.length > 0 || updated.status !== domain.status) {
        await recordEvent(trx, {
          workspaceId: domain.workspace_id,
          type: 'domain.updated',
          at: now,
          data: domainEventData(updated, changed),
        });
      }
    });
    if (verifiedNow && domain.status !== 'verified')
      logger.info({ domainId: domain.id, workspaceId: domain.workspace_id }, 'domain verified');
    if (changed.length > 0)
      logger.info({ domainId: domain.id, workspaceId: domain.workspace_id, changes: changed }, 'domain checks changed');
    return { domain: updated, checks };
  };
}

/** `domain.updated`: the domain (Resend's fields: id, name, status, created_at) and which checks changed. */
function domainEventData(domain: DomainView, changes: ReturnType<typeof checkChanges>): Record<string, unknown> {
  return {
    id: domain.id,
    name: domain.domain_name,
    status: domain.status,
    created_at: domain.created_at,
    checks: domain.checks
      ? Object.fromEntries(
          Object.entries(domain.checks).flatMap(([k, v]) =>
            v && typeof v === 'object' && 'status' in v ? [[k, (v as { status: string }).status]] : [],
          ),
        )
      : null,
    changes,
  };
}
