import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { domainOf } from '../../shared/domain-name.js';
import type { Config } from '../../config/schema.js';
import { reportAddresses } from '../../config/report-addresses.js';
import { domainChecksOf } from '../../checks/domain-checks.js';
import type { DomainChecks } from '../../checks/domain-checks.js';
import type { DkimKey, Domain, DomainTls } from '../../store/domains.js';

/**
 * What a domain asks of DNS, and how it is shown: the DKIM CNAMEs its owner publishes (and the
 * keys the operator publishes under dkim.host), the return path, receiving and report records.
 */

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

interface DomainSettingsView {
  open_tracking: boolean | null;
  click_tracking: boolean | null;
  tls: DomainTls;
  /** The VERP return path's subdomain in use (the domain's own, or delivery.returnPathSubdomain). */
  custom_return_path: string;
  tracking_subdomain: string | null;
}

/** What `domains.update` may change; absent fields are left as they are, null returns to the default. */
export interface VerificationCheck {
  record: DnsRecord;
  ok: boolean;
  error: string | null;
}

export interface VerificationResult {
  domain: DomainView;
  checks: VerificationCheck[];
}

export const dkimTxtValue = (publicKey: string): string => `v=DKIM1; k=rsa; p=${publicKey}`;

export type DomainRecords = ReturnType<typeof domainRecords>;

export function domainRecords(config: Config) {
  const dkimHost = config.dkim.host.replace(/\.$/, '').toLowerCase();
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
  const receivingRecords = (domainName: string): DnsRecord[] => [
    { type: 'MX', name: domainName, value: `10 ${config.delivery.hostname.replace(/\.$/, '').toLowerCase()}` },
  ];

  const view = (d: Domain, keys: DkimKey[]): DomainView => {
    const tokens = keys
      .filter((k) => k.domain_id === d.id)
      .sort((a, b) => a.position - b.position)
      .map((k) => k.selector);
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
      reportsHost:
        reportDomain === domainName
          ? []
          : [{ type: 'TXT', name: `${domainName}._report._dmarc.${reportDomain}`, value: 'v=DMARC1' }],
    };
  };

  return { dkimHost, cnameRecord, returnPathSubdomainOf, returnPathRecords, receivingRecords, view, reportRecords };
}
