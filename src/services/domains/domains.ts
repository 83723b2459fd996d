import { generateKeyPair, randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { encryptSecret } from '../shared/crypto.js';
import { isNoRecordError } from '../shared/dns.js';
import { normalizeDomain, domainOf } from '../shared/domain-name.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  findDomain,
  findDomainByIdOrName,
  findDomainByName,
  listDkimKeys,
  listDomains,
  listDomainsCheckedBefore,
  listPendingDomains,
  removeDomain,
  saveDomain,
  updateDomain,
  type DkimKey,
  type Domain,
  type DomainTls,
} from '../store/domains.js';
import { recordEvent } from '../events/record-event.js';
import type { ServiceDeps } from './deps.js';
import { domainChecksOf, type DomainChecks } from '../checks/domain-checks.js';
import { checkChanges, createDomainHealth } from '../checks/domain-health.js';
import { reportAddresses } from '../config/report-addresses.js';
import { checkMetadata } from '../shared/metadata.js';

const generateKeyPairAsync = promisify(generateKeyPair);

export const DKIM_TOKENS_PER_DOMAIN = 3;
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN_LENGTH = 32;

export interface DnsRecord {
  type: 'CNAME' | 'TXT' | 'MX';
  name: string;
  value: string;
}

export interface DomainView {
  id: string;
  domain_name: string;
  status: Domain['status'];
  dkim_tokens: string[];
  dns_records: DnsRecord[];
  created_at: string;
  verified_at: string | null;
  last_checked_at: string | null;
  last_check_error: string | null;
  external_id: string | null;
  metadata: Record<string, unknown> | null;
  /** The last deliverability checks (SPF, DMARC, DKIM, …); null until the first check. */
  checks: DomainChecks | null;
  /** The IP pool of its mail when a message names none (null: the workspace's). */
  ip_pool_id: string | null;
  /** The domain's own settings (domains.update); null tracking: the server's default. */
  settings: DomainSettingsView;
}

export interface DomainSettingsView {
  open_tracking: boolean | null;
  click_tracking: boolean | null;
  tls: DomainTls;
  /** The VERP return path's subdomain in use (the domain's own, or delivery.returnPathSubdomain). */
  custom_return_path: string;
  tracking_subdomain: string | null;
}

/** What `domains.update` may change; absent fields are left as they are, null returns to the default. */
export interface DomainSettingsInput {
  open_tracking?: boolean | null | undefined;
  click_tracking?: boolean | null | undefined;
  tls?: DomainTls | undefined;
  custom_return_path?: string | null | undefined;
  tracking_subdomain?: string | null | undefined;
}

export interface AddDomainInput {
  domain: string;
  external_id?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export interface VerificationCheck {
  record: DnsRecord;
  ok: boolean;
  error: string | null;
}

export interface VerificationResult {
  domain: DomainView;
  checks: VerificationCheck[];
}

export interface DomainService {
  add(workspaceId: string, input: AddDomainInput): Promise<DomainView>;
  list(workspaceId: string): Promise<DomainView[]>;
  get(workspaceId: string, idOrName: string): Promise<DomainView>;
  remove(workspaceId: string, idOrName: string): Promise<void>;
  /** Changes the domain's tracking, TLS policy, return-path or tracking subdomain. */
  update(workspaceId: string, idOrName: string, input: DomainSettingsInput): Promise<DomainView>;
  /** The customer's CNAMEs and, for the operator, the TXT public keys under dkim.host. */
  recordsToPublish(
    workspaceId: string,
    idOrName: string,
  ): Promise<{ domain: DomainView; customer: DnsRecord[]; dkimHost: DnsRecord[]; returnPath: DnsRecord[]; receiving: DnsRecord[]; reports: DnsRecord[]; reportsHost: DnsRecord[] }>;
  /** Checks DNS now: DKIM (the domain becomes verified when every key matches) and every deliverability check. */
  verify(workspaceId: string, idOrName: string): Promise<VerificationResult>;
  /** Checks pending domains not checked for `intervalSeconds`; returns how many became verified. */
  recheckPending(intervalSeconds: number, limit?: number): Promise<number>;
  /** Checks every domain not checked for `intervalSeconds` (deliverability.checkInterval); returns how many were checked. */
  recheckAll(intervalSeconds: number, limit?: number): Promise<number>;
}

const randomToken = (): string => Array.from({ length: TOKEN_LENGTH }, () => TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)]).join('');

const dkimTxtValue = (publicKey: string): string => `v=DKIM1; k=rsa; p=${publicKey}`;

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

const sameName = (a: string, b: string): boolean => a.replace(/\.$/, '').toLowerCase() === b.replace(/\.$/, '').toLowerCase();

export function createDomainService(deps: ServiceDeps): DomainService {
  const { db, clock, config, resolver, logger, secretKey } = deps;
  const dkimHost = config.dkim.host.replace(/\.$/, '').toLowerCase();
  const health = createDomainHealth(deps);

  const cnameRecord = (domain: string, token: string): DnsRecord => ({
    type: 'CNAME',
    name: `${token}._domainkey.${domain}`,
    value: `${token}.${dkimHost}`,
  });

  /**
   * Recommended, not verified: the bounce domain of the VERP envelope sender
   * (`b-…@<delivery.returnPathSubdomain>.<domain>`) gets an MX pointing at this server, so
   * asynchronous bounces come back, and an SPF record naming it, so the envelope domain passes
   * SPF (aligned with the From domain under DMARC's relaxed rule).
   */
  const returnPathSubdomainOf = (d: Domain): string => d.return_path_subdomain ?? config.delivery.returnPathSubdomain;
  const returnPathRecords = (domainName: string, sub: string): DnsRecord[] => {
    const host = config.delivery.hostname.replace(/\.$/, '').toLowerCase();
    // Without a subdomain the envelope domain is the sending domain itself: its MX stays the
    // owner's (bounces then go there), and only SPF needs this server (merge with any existing record).
    if (!sub) return [{ type: 'TXT', name: domainName, value: `v=spf1 a:${host} ~all` }];
    return [
      { type: 'MX', name: `${sub}.${domainName}`, value: `10 ${host}` },
      { type: 'TXT', name: `${sub}.${domainName}`, value: `v=spf1 a:${host} -all` },
    ];
  };

  /** To receive mail at the domain (receiving routes): its MX points at this server's inbound listener. */
  const receivingRecords = (domainName: string): DnsRecord[] => [{ type: 'MX', name: domainName, value: `10 ${config.delivery.hostname.replace(/\.$/, '').toLowerCase()}` }];

  const view = (d: Domain, keys: DkimKey[]): DomainView => {
    const tokens = keys.filter((k) => k.domain_id === d.id).sort((a, b) => a.position - b.position).map((k) => k.selector);
    return {
      id: d.id,
      domain_name: d.name,
      status: d.status,
      dkim_tokens: tokens,
      dns_records: tokens.map((t) => cnameRecord(d.name, t)),
      created_at: toIso(d.created_at),
      verified_at: toIsoOrNull(d.verified_at),
      last_checked_at: toIsoOrNull(d.last_checked_at),
      last_check_error: d.last_check_error,
      external_id: d.external_id,
      metadata: d.metadata,
      checks: domainChecksOf(d),
      ip_pool_id: d.ip_pool_id,
      settings: {
        open_tracking: d.open_tracking,
        click_tracking: d.click_tracking,
        tls: d.tls,
        custom_return_path: returnPathSubdomainOf(d),
        tracking_subdomain: d.tracking_subdomain,
      },
    };
  };

  /**
   * Reports about the domain come to this server (inbound listener on): the rua the domain's
   * DMARC and TLS-RPT records name, and, because that address is outside the domain, the
   * record the operator publishes to accept reports for it (RFC 7489 §7.1).
   */
  const reportRecords = (domainName: string): { reports: DnsRecord[]; reportsHost: DnsRecord[] } => {
    const addresses = reportAddresses(config);
    if (!addresses) return { reports: [], reportsHost: [] };
    const reportDomain = domainOf(addresses.dmarc);
    return {
      reports: [
        { type: 'TXT', name: `_dmarc.${domainName}`, value: `v=DMARC1; p=none; rua=mailto:${addresses.dmarc}` },
        { type: 'TXT', name: `_smtp._tls.${domainName}`, value: `v=TLSRPTv1; rua=mailto:${addresses.tls}` },
      ],
      reportsHost: reportDomain === domainName ? [] : [{ type: 'TXT', name: `${domainName}._report._dmarc.${reportDomain}`, value: 'v=DMARC1' }],
    };
  };

  const find = async (workspaceId: string, idOrName: string): Promise<Domain> => {
    const found = await findDomainByIdOrName(db, workspaceId, idOrName);
    if (!found) throw notFound(`Domain ${idOrName}`);
    return found;
  };

  const keysOf = (domain: Domain) => listDkimKeys(db, [domain.id]);

  /** Checks one token: the customer's CNAME points at our host, and our host publishes the matching key. */
  const checkToken = async (domain: Domain, key: DkimKey): Promise<VerificationCheck> => {
    const record = cnameRecord(domain.name, key.selector);
    const fail = (error: string): VerificationCheck => ({ record, ok: false, error });
    let targets: string[];
    try {
      targets = await resolver.resolveCname(record.name);
    } catch (err) {
      return fail(isNoRecordError(err) ? `no CNAME record at ${record.name}` : `DNS error for ${record.name}: ${(err as Error).message}`);
    }
    if (!targets.some((t) => sameName(t, record.value))) {
      return fail(`CNAME ${record.name} points to ${targets.join(', ')}, expected ${record.value}`);
    }
    let txt: string[][];
    try {
      txt = await resolver.resolveTxt(record.value);
    } catch (err) {
      return fail(isNoRecordError(err) ? `no DKIM key published at ${record.value}` : `DNS error for ${record.value}: ${(err as Error).message}`);
    }
    const published = txt.map((chunks) => parseTagList(chunks.join(''))).find((tags) => tags.has('p'));
    if (!published) return fail(`no DKIM key (p=) in the TXT record at ${record.value}`);
    if (published.get('p') !== key.public_key) return fail(`the DKIM key published at ${record.value} does not match this domain's key`);
    return { record, ok: true, error: null };
  };

  const verifyDomain = async (domain: Domain): Promise<VerificationResult> => {
    const keys = await keysOf(domain);
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
        await recordEvent(trx, { workspaceId: domain.workspace_id, type: 'domain.updated', at: now, data: domainEventData(updated, changed) });
      }
    });
    if (verifiedNow && domain.status !== 'verified') logger.info({ domainId: domain.id, workspaceId: domain.workspace_id }, 'domain verified');
    if (changed.length > 0) logger.info({ domainId: domain.id, workspaceId: domain.workspace_id, changes: changed }, 'domain checks changed');
    return { domain: updated, checks };
  };

  return {
    async add(workspaceId, input) {
      const name = normalizeDomain(input.domain);
      if (!name) throw validationError('domain', `"${input.domain}" is not a valid domain name`);
      if (input.metadata !== undefined) checkMetadata('metadata', input.metadata);
      if (await findDomainByName(db, workspaceId, name)) throw new AppError('already_exists', `Domain ${name} already exists`, { field: 'domain' });

      const now = clock.now();
      const domain: Domain = {
        id: newId(),
        workspace_id: workspaceId,
        name,
        status: 'pending',
        external_id: input.external_id ?? null,
        metadata: input.metadata ?? null,
        created_at: now,
        verified_at: null,
        last_checked_at: null,
        last_check_error: null,
        checks: null,
      ip_pool_id: null,
        open_tracking: null,
        click_tracking: null,
        tls: 'opportunistic',
        return_path_subdomain: null,
        tracking_subdomain: null,
      };
      // RSA-2048: every mailbox provider verifies it; key generation runs on libuv's pool.
      const pairs = await Promise.all(
        Array.from({ length: DKIM_TOKENS_PER_DOMAIN }, () =>
          generateKeyPairAsync('rsa', {
            modulusLength: 2048,
            publicKeyEncoding: { type: 'spki', format: 'der' },
            privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
          }),
        ),
      );
      const keys: DkimKey[] = pairs.map((pair, position) => ({
        selector: randomToken(),
        domain_id: domain.id,
        position,
        private_key_sealed: encryptSecret(secretKey, pair.privateKey),
        public_key: pair.publicKey.toString('base64'),
        created_at: now,
      }));
      await saveDomain(db, domain, keys);
      return view(domain, keys);
    },

    async list(workspaceId) {
      const domains = await listDomains(db, workspaceId);
      const keys = await listDkimKeys(db, domains.map((d) => d.id));
      return domains.map((d) => view(d, keys));
    },

    async get(workspaceId, idOrName) {
      const domain = await find(workspaceId, idOrName);
      return view(domain, await keysOf(domain));
    },

    async remove(workspaceId, idOrName) {
      const domain = await find(workspaceId, idOrName);
      await removeDomain(db, workspaceId, domain.id);
    },

    async update(workspaceId, idOrName, input) {
      const domain = await find(workspaceId, idOrName);
      const label = (field: string, v: string | null | undefined) => {
        if (v === undefined || v === null) return v;
        const name = v.trim().toLowerCase();
        // One DNS label: it is put in front of the domain's name.
        if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(name)) throw validationError(field, 'must be one DNS label: letters, digits and hyphens, at most 63, not starting or ending with a hyphen');
        return name;
      };
      const changes = {
        open_tracking: input.open_tracking,
        click_tracking: input.click_tracking,
        tls: input.tls,
        return_path_subdomain: label('custom_return_path', input.custom_return_path),
        tracking_subdomain: label('tracking_subdomain', input.tracking_subdomain),
      };
      const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
      if (Object.keys(set).length > 0) await updateDomain(db, domain.id, set);
      const updated = (await findDomain(db, workspaceId, domain.id)) ?? domain;
      return view(updated, await keysOf(updated));
    },

    async recordsToPublish(workspaceId, idOrName) {
      const domain = await find(workspaceId, idOrName);
      const keys = await keysOf(domain);
      const v = view(domain, keys);
      return {
        domain: v,
        customer: v.dns_records,
        dkimHost: keys.map((k) => ({ type: 'TXT' as const, name: `${k.selector}.${dkimHost}`, value: dkimTxtValue(k.public_key) })),
        returnPath: returnPathRecords(domain.name, returnPathSubdomainOf(domain)),
        receiving: receivingRecords(domain.name),
        ...reportRecords(domain.name),
      };
    },

    verify: async (workspaceId, idOrName) => verifyDomain(await find(workspaceId, idOrName)),

    async recheckPending(intervalSeconds, limit = 50) {
      const due = await listPendingDomains(db, clock.now() - intervalSeconds * 1000, limit);
      let verified = 0;
      for (const domain of due) {
        const result = await verifyDomain(domain);
        if (result.domain.status === 'verified') verified++;
      }
      return verified;
    },

    async recheckAll(intervalSeconds, limit = 50) {
      const due = await listDomainsCheckedBefore(db, clock.now() - intervalSeconds * 1000, limit);
      for (const domain of due) await verifyDomain(domain);
      return due.length;
    },
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
      ? Object.fromEntries(Object.entries(domain.checks).flatMap(([k, v]) => (v && typeof v === 'object' && 'status' in v ? [[k, (v as { status: string }).status]] : [])))
      : null,
    changes,
  };
}
