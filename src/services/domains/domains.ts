import { normalizeDomain } from '../../shared/domain-name.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
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
  type Domain,
  type DomainTls,
} from '../../store/domains.js';
import type { ServiceDeps } from '../deps.js';
import { checkMetadata } from '../../shared/metadata.js';
import { newDkimKeys } from './dkim-keys.js';
import { dkimTxtValue, domainRecords } from './domain-records.js';
import { domainVerifier } from './verify-domain.js';
import type { DnsRecord, DomainView, VerificationResult } from './domain-records.js';

export type { DnsRecord, DomainView, VerificationCheck, VerificationResult } from './domain-records.js';

export interface DomainSettingsInput {
  open_tracking?: boolean | null | undefined;
  click_tracking?: boolean | null | undefined;
  tls?: DomainTls | undefined;
  custom_return_path?: string | null | undefined;
  tracking_subdomain?: string | null | undefined;
}

interface AddDomainInput {
  domain: string;
  external_id?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
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
  ): Promise<{
    domain: DomainView;
    customer: DnsRecord[];
    dkimHost: DnsRecord[];
    returnPath: DnsRecord[];
    receiving: DnsRecord[];
    reports: DnsRecord[];
    reportsHost: DnsRecord[];
  }>;
  /** Checks DNS now: DKIM (the domain becomes verified when every key matches) and every deliverability check. */
  verify(workspaceId: string, idOrName: string): Promise<VerificationResult>;
  /** Checks pending domains not checked for `intervalSeconds`; returns how many became verified. */
  recheckPending(intervalSeconds: number, limit?: number): Promise<number>;
  /** Checks every domain not checked for `intervalSeconds` (deliverability.checkInterval); returns how many were checked. */
  recheckAll(intervalSeconds: number, limit?: number): Promise<number>;
}

export function createDomainService(deps: ServiceDeps): DomainService {
  const { db, clock, config, secretKey } = deps;
  const records = domainRecords(config);
  const { view, returnPathSubdomainOf } = records;
  const verifyDomain = domainVerifier(deps, records);
  const find = async (workspaceId: string, idOrName: string): Promise<Domain> => {
    const found = await findDomainByIdOrName(db, workspaceId, idOrName);
    if (!found) throw notFound(`Domain ${idOrName}`);
    return found;
  };

  const keysOf = (domain: Domain) => listDkimKeys(db, [domain.id]);

  return {
    async add(workspaceId, input) {
      const name = normalizeDomain(input.domain);
      if (!name) throw validationError('domain', `"${input.domain}" is not a valid domain name`);
      if (input.metadata !== undefined) checkMetadata('metadata', input.metadata);
      if (await findDomainByName(db, workspaceId, name))
        throw new AppError('already_exists', `Domain ${name} already exists`, { field: 'domain' });

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
      const keys = await newDkimKeys(secretKey, domain.id, now);
      await saveDomain(db, domain, keys);
      return view(domain, keys);
    },

    async list(workspaceId) {
      const domains = await listDomains(db, workspaceId);
      const keys = await listDkimKeys(
        db,
        domains.map((d) => d.id),
      );
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
        if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(name))
          throw validationError(
            field,
            'must be one DNS label: letters, digits and hyphens, at most 63, not starting or ending with a hyphen',
          );
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
        dkimHost: keys.map((k) => ({
          type: 'TXT' as const,
          name: `${k.selector}.${records.dkimHost}`,
          value: dkimTxtValue(k.public_key),
        })),
        returnPath: records.returnPathRecords(domain.name, returnPathSubdomainOf(domain)),
        receiving: records.receivingRecords(domain.name),
        ...records.reportRecords(domain.name),
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
