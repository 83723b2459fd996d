import { validateMx } from 'mailauth/lib/mta-sts.js';
import type { MTASTSPolicy } from 'mailauth';
import type { PolicyFetcher } from '../delivery/mta-sts.js';
import { bounceDomainOf } from '../delivery/return-path.js';
import { isNoRecordError, type DnsResolver } from '../shared/dns.js';
import { mailauthResolver } from '../shared/mailauth-resolver.js';
import { worstStatus, type Check, type CheckStatus, type PublishRecord } from './check-status.js';

/**
 * SPF evaluation and DMARC look-ups: about 5 MB of heap (the public suffix list among it),
 * loaded with the first check rather than by every server as it starts.
 */
const loadChecks = async () => {
  const [spf, dmarc, tools] = await Promise.all([
    import('mailauth/lib/spf/index.js'),
    import('mailauth/lib/dmarc/get-dmarc-record.js'),
    import('mailauth/lib/tools.js'),
  ]);
  return { evaluateSpf: spf.spf, getDmarcRecord: dmarc.default, getAlignment: tools.getAlignment };
};
let checks: ReturnType<typeof loadChecks> | undefined;

/**
 * The deliverability checks of one sending domain, as a receiver sees it, every look-up
 * through the configured resolver: DKIM (the CNAMEs and keys, checked by the domain
 * service), SPF of the envelope (Return-Path) domain evaluated by mailauth for this server's
 * addresses, DMARC with its policy and our alignment, the return path's MX when the inbound
 * listener takes bounces, and MTA-STS and TLS-RPT when published.
 */

export interface DkimTokenResult {
  record: { type: 'CNAME' | 'TXT' | 'MX'; name: string; value: string };
  ok: boolean;
  error: string | null;
}

interface DomainCheckEnv {
  resolver: DnsResolver;
  /** delivery.hostname: the EHLO name, the MX target of bounce domains. */
  hostname: string;
  returnPathSubdomain: string;
  /** The inbound listener runs: bounces come back, reports can be received. */
  inboundEnabled: boolean;
  /** The addresses this server sends from; empty when they could not be found. */
  sendingIps: string[];
  /** Where DMARC and TLS reports go (null when the inbound listener is off). */
  reportAddresses: { dmarc: string; tls: string } | null;
  fetchMtaStsPolicy: PolicyFetcher;
}

export interface DomainChecks {
  checked_at: string;
  /** The worst status of the checks that matter (an optional record not published counts as ok). */
  status: CheckStatus;
  dkim: Check & { records: Array<{ name: string; value: string; ok: boolean; error: string | null }> };
  spf: Check & { domain: string; results: Array<{ ip: string; result: string }> };
  dmarc: Check & { policy: string | null; dkim_aligned: boolean; spf_aligned: boolean };
  /** Present when the inbound listener takes bounces at a return-path subdomain. */
  return_path_mx?: Check & { domain: string };
  mta_sts: Check & { mode: string | null };
  tls_rpt: Check;
}

/** A domain's last checks as the store keeps them (null: never run); they were written by runDomainChecks. */
export const domainChecksOf = (domain: { checks: unknown }): DomainChecks | null =>
  domain.checks as DomainChecks | null;

const check = (
  status: CheckStatus,
  required: boolean,
  message: string,
  found: string | null = null,
  publish: PublishRecord[] = [],
): Check => ({
  status,
  required,
  message,
  found,
  publish,
});

const trimDot = (name: string) => name.replace(/\.$/, '').toLowerCase();

/** TXT records at `name` joined from their strings; [] when there are none, null on a DNS failure. */
async function txtRecords(resolver: DnsResolver, name: string): Promise<string[] | null> {
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch (err) {
    return isNoRecordError(err) ? [] : null;
  }
}

/** `k=v; k=v` tag lists (DMARC, MTA-STS, TLS-RPT), keys lower-cased. */
function parseTags(text: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return tags;
}

function dkimCheck(results: DkimTokenResult[]): DomainChecks['dkim'] {
  const records = results.map((r) => ({ name: r.record.name, value: r.record.value, ok: r.ok, error: r.error }));
  const publish = results.filter((r) => !r.ok).map((r) => r.record);
  const base = { records };
  if (results.length > 0 && results.every((r) => r.ok)) {
    return {
      ...base,
      ...check(
        'ok',
        true,
        `All ${results.length} DKIM records resolve to this domain's keys: mail is signed with d=${trimDot(results[0]!.record.name.split('._domainkey.')[1] ?? '')}.`,
        results.map((r) => `${r.record.name} CNAME ${r.record.value}`).join('\n'),
      ),
    };
  }
  const missing = results.filter((r) => r.error?.startsWith('no CNAME'));
  if (missing.length === results.length) {
    return {
      ...base,
      ...check(
        'not_published',
        true,
        `No DKIM record is published: publish the ${results.length} CNAME records below; without DKIM, Gmail and Yahoo refuse bulk mail.`,
        null,
        publish,
      ),
    };
  }
  const problems = results.filter((r) => !r.ok).map((r) => r.error);
  return {
    ...base,
    ...check(
      'failing',
      true,
      `DKIM is not set up right: ${problems.join('; ')}.`,
      results
        .filter((r) => r.ok)
        .map((r) => r.record.name)
        .join('\n') || null,
      publish,
    ),
  };
}

/** The SPF record to publish: ours if none, else the existing one with this host added before its `all`. */
function spfToPublish(existing: string | null, host: string, strict: boolean): string {
  const mechanism = `a:${host}`;
  if (!existing) return `v=spf1 ${mechanism} ${strict ? '-all' : '~all'}`;
  const terms = existing.trim().split(/\s+/);
  if (terms.some((t) => t.toLowerCase() === mechanism.toLowerCase())) return existing;
  const tail = terms.findIndex((t) => /^[-~?+]?all$/i.test(t) || /^redirect=/i.test(t));
  if (tail < 0) return [...terms, mechanism].join(' ');
  return [...terms.slice(0, tail), mechanism, ...terms.slice(tail)].join(' ');
}

async function spfCheck(domain: string, env: DomainCheckEnv): Promise<DomainChecks['spf']> {
  const host = trimDot(env.hostname);
  const envelopeDomain = bounceDomainOf(domain, env.returnPathSubdomain);
  const strict = envelopeDomain !== domain;
  const records = await txtRecords(env.resolver, envelopeDomain);
  const base = { domain: envelopeDomain, results: [] as Array<{ ip: string; result: string }> };
  if (records === null)
    return {
      ...base,
      ...check(
        'warning',
        true,
        `Could not read the TXT records of ${envelopeDomain} (DNS failure); checked again later.`,
      ),
    };
  const spfRecords = records.filter((r) => /^v=spf1(\s|$)/i.test(r.trim()));
  const found = spfRecords.join('\n') || null;
  const publishFor = (existing: string | null): PublishRecord[] => [
    { type: 'TXT', name: envelopeDomain, value: spfToPublish(existing, host, strict) },
  ];
  if (spfRecords.length === 0) {
    return {
      ...base,
      ...check(
        'not_published',
        true,
        `${envelopeDomain} (the Return-Path domain) has no SPF record: publish one that names this server.`,
        null,
        publishFor(null),
      ),
    };
  }
  if (spfRecords.length > 1) {
    return {
      ...base,
      ...check(
        'failing',
        true,
        `${envelopeDomain} has ${spfRecords.length} SPF records; receivers treat that as an error (RFC 7208 §4.5): merge them into one.`,
        found,
        publishFor(spfRecords[0]!),
      ),
    };
  }
  if (env.sendingIps.length === 0) {
    return {
      ...base,
      ...check(
        'warning',
        true,
        `Cannot tell which address this server sends from: publish an A record for ${host} or set deliverability.sendingIps.`,
        found,
      ),
    };
  }
  const resolver = mailauthResolver(env.resolver);
  const { evaluateSpf } = await (checks ??= loadChecks());
  const results = await Promise.all(
    env.sendingIps.map(async (ip) => {
      const result = await evaluateSpf({ sender: `postmaster@${envelopeDomain}`, ip, helo: host, mta: host, resolver });
      return { ip, result: result.status.result };
    }),
  );
  const withResults = { ...base, results };
  const notPassing = results.filter((r) => r.result !== 'pass');
  if (notPassing.length === 0)
    return {
      ...withResults,
      ...check('ok', true, `SPF of ${envelopeDomain} authorises this server (${env.sendingIps.join(', ')}).`, found),
    };
  if (notPassing.every((r) => r.result === 'temperror')) {
    return {
      ...withResults,
      ...check(
        'warning',
        true,
        `SPF of ${envelopeDomain} could not be evaluated (temporary DNS error); checked again later.`,
        found,
      ),
    };
  }
  const detail = notPassing.map((r) => `${r.ip}: ${r.result}`).join(', ');
  const why = notPassing.some((r) => r.result === 'permerror')
    ? ' The record is broken (syntax, or more than 10 DNS look-ups).'
    : '';
  return {
    ...withResults,
    ...check(
      'failing',
      true,
      `SPF of ${envelopeDomain} does not authorise this server (${detail}).${why} Add a:${host} to the record.`,
      found,
      publishFor(spfRecords[0]!),
    ),
  };
}

const dmarcRecordToPublish = (reportAddress: string | null): string =>
  `v=DMARC1; p=none${reportAddress ? `; rua=mailto:${reportAddress}` : ''}`;

async function dmarcCheck(domain: string, env: DomainCheckEnv): Promise<DomainChecks['dmarc']> {
  const name = `_dmarc.${domain}`;
  const own = await txtRecords(env.resolver, name);
  const base = { policy: null as string | null, dkim_aligned: true, spf_aligned: false };
  const reportAddress = env.reportAddresses?.dmarc ?? null;
  const publish: PublishRecord[] = [{ type: 'TXT', name, value: dmarcRecordToPublish(reportAddress) }];
  if (own === null)
    return { ...base, ...check('warning', true, `Could not read ${name} (DNS failure); checked again later.`) };
  const ownRecords = own.filter((r) => /^v=DMARC1\b/i.test(r.trim()));
  if (ownRecords.length > 1) {
    return {
      ...base,
      ...check(
        'failing',
        true,
        `${name} has ${ownRecords.length} DMARC records; receivers then apply none (RFC 7489 §6.6.3): keep one.`,
        ownRecords.join('\n'),
        publish,
      ),
    };
  }
  const { getDmarcRecord, getAlignment } = await (checks ??= loadChecks());
  let record: Awaited<ReturnType<typeof getDmarcRecord>>;
  try {
    record = await getDmarcRecord(domain, mailauthResolver(env.resolver));
  } catch {
    return {
      ...base,
      ...check('warning', true, `Could not read the DMARC record of ${domain} (DNS failure); checked again later.`),
    };
  }
  if (!record) {
    return {
      ...base,
      ...check(
        'not_published',
        true,
        `${domain} has no DMARC record. Gmail and Yahoo require one from bulk senders; p=none is enough to start.`,
        null,
        publish,
      ),
    };
  }
  const policy = typeof record.p === 'string' ? record.p.trim().toLowerCase() : null;
  const where = record.isOrgRecord ? ` (inherited from the organizational domain's record)` : '';
  if (!policy || !['none', 'quarantine', 'reject'].includes(policy)) {
    return {
      ...base,
      policy,
      ...check(
        'failing',
        true,
        `The DMARC record of ${domain}${where} has no valid p= tag, so receivers ignore it: use p=none, quarantine or reject.`,
        record.rr,
        publish,
      ),
    };
  }
  // We sign with d=<domain>: aligned under strict and relaxed rules alike. The envelope
  // domain is bounces.<domain>: aligned only under relaxed SPF alignment.
  const envelopeDomain = bounceDomainOf(domain, env.returnPathSubdomain);
  const strictSpf = String(record.aspf ?? 'r').toLowerCase() === 's';
  const spfAligned = strictSpf ? envelopeDomain === domain : getAlignment(domain, [envelopeDomain], false) !== false;
  const notes: string[] = [];
  let status: CheckStatus = 'ok';
  if (!spfAligned) {
    status = 'warning';
    notes.push(
      `SPF does not align (aspf=s and the Return-Path domain is ${envelopeDomain}); DKIM does, so DMARC passes, but set aspf=r to align both`,
    );
  }
  const rua = typeof record.rua === 'string' ? record.rua : '';
  const ruaHasUs = reportAddress !== null && rua.toLowerCase().includes(`mailto:${reportAddress.toLowerCase()}`);
  const suggested =
    reportAddress && !ruaHasUs ? [{ type: 'TXT' as const, name, value: withRua(record.rr, reportAddress) }] : [];
  if (reportAddress && !ruaHasUs)
    notes.push(`add rua=mailto:${reportAddress} to see who sends mail as ${domain} (aggregate reports)`);
  if (policy === 'none')
    notes.push('p=none only monitors; move to quarantine or reject once the reports show only your own servers');
  const message = `DMARC policy ${policy}${where}; DKIM aligns${spfAligned ? ', SPF aligns' : ''}.${notes.length ? ` ${notes.map((n) => n[0]!.toUpperCase() + n.slice(1)).join('. ')}.` : ''}`;
  return { policy, dkim_aligned: true, spf_aligned: spfAligned, ...check(status, true, message, record.rr, suggested) };
}

/** A DMARC record with `address` added to its rua (or a rua added). */
function withRua(record: string, address: string): string {
  const parts = record
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean);
  const i = parts.findIndex((p) => /^rua\s*=/i.test(p));
  if (i < 0) return [...parts, `rua=mailto:${address}`].join('; ');
  parts[i] = `${parts[i]},mailto:${address}`;
  return parts.join('; ');
}

async function returnPathMxCheck(domain: string, env: DomainCheckEnv): Promise<DomainChecks['return_path_mx']> {
  const bounceDomain = bounceDomainOf(domain, env.returnPathSubdomain);
  const host = trimDot(env.hostname);
  const publish: PublishRecord[] = [{ type: 'MX', name: bounceDomain, value: `10 ${host}` }];
  let mx: Array<{ exchange: string; priority: number }>;
  try {
    mx = await env.resolver.resolveMx(bounceDomain);
  } catch (err) {
    if (!isNoRecordError(err))
      return {
        domain: bounceDomain,
        ...check('warning', false, `Could not read the MX of ${bounceDomain} (DNS failure); checked again later.`),
      };
    mx = [];
  }
  const found = mx.map((m) => `${m.priority} ${m.exchange}`).join('\n') || null;
  if (mx.length === 0) {
    return {
      domain: bounceDomain,
      ...check(
        'not_published',
        false,
        `${bounceDomain} has no MX: asynchronous bounces cannot come back to this server, so bad addresses stay on your lists.`,
        null,
        publish,
      ),
    };
  }
  if (!mx.some((m) => trimDot(m.exchange) === host)) {
    return {
      domain: bounceDomain,
      ...check(
        'failing',
        false,
        `The MX of ${bounceDomain} points to ${mx.map((m) => m.exchange).join(', ')}, not to ${host}: bounces go elsewhere.`,
        found,
        publish,
      ),
    };
  }
  return { domain: bounceDomain, ...check('ok', false, `Bounces to ${bounceDomain} come back to ${host}.`, found) };
}

async function mtaStsCheck(domain: string, env: DomainCheckEnv): Promise<DomainChecks['mta_sts']> {
  const name = `_mta-sts.${domain}`;
  const records = await txtRecords(env.resolver, name);
  if (records === null)
    return { mode: null, ...check('warning', false, `Could not read ${name} (DNS failure); checked again later.`) };
  const sts = records.filter((r) => /^v=STSv1\b/i.test(r.trim()));
  if (sts.length === 0) {
    return {
      mode: null,
      ...check(
        'not_published',
        false,
        `Optional: MTA-STS (RFC 8461) makes other servers deliver to ${domain} only over verified TLS. It needs this TXT record and a policy file at https://mta-sts.${domain}/.well-known/mta-sts.txt.`,
      ),
    };
  }
  const found = sts.join('\n');
  if (sts.length > 1)
    return {
      mode: null,
      ...check(
        'failing',
        false,
        `${name} has ${sts.length} MTA-STS records; senders then ignore MTA-STS (RFC 8461 §3.1): keep one.`,
        found,
      ),
    };
  const id = parseTags(sts[0]!).get('id');
  if (!id || !/^[A-Za-z0-9]{1,32}$/.test(id)) {
    return {
      mode: null,
      ...check(
        'failing',
        false,
        `The MTA-STS record has no valid id= (1 to 32 letters and digits), so senders ignore it: e.g. v=STSv1; id=${new Date().toISOString().slice(0, 10).replace(/-/g, '')}01.`,
        found,
      ),
    };
  }
  let policy: MTASTSPolicy;
  try {
    policy = await env.fetchMtaStsPolicy(domain, undefined);
  } catch (err) {
    return {
      mode: null,
      ...check(
        'failing',
        false,
        `The policy file at https://mta-sts.${domain}/.well-known/mta-sts.txt could not be fetched: ${(err as Error).message}.`,
        found,
      ),
    };
  }
  const error = (policy as { error?: Error }).error;
  if (error || !policy.mode || policy.mode === 'none') {
    const reason = error ? `could not be fetched: ${error.message}` : 'was not found';
    return {
      mode: policy.mode ?? null,
      ...check(
        error ? 'failing' : 'warning',
        false,
        `The policy file at https://mta-sts.${domain}/.well-known/mta-sts.txt ${reason}.`,
        found,
      ),
    };
  }
  if (policy.mode === 'enforce') {
    let mx: string[] = [];
    try {
      mx = (await env.resolver.resolveMx(domain)).map((m) => trimDot(m.exchange));
    } catch {
      // No MX: nothing to compare with.
    }
    const uncovered = mx.filter((host) => !validateMx(host, policy).valid);
    if (uncovered.length > 0) {
      return {
        mode: 'enforce',
        ...check(
          'failing',
          false,
          `The enforced MTA-STS policy does not list the MX host(s) ${uncovered.join(', ')}: senders that honour it will not deliver there. Add them as mx: lines.`,
          found,
        ),
      };
    }
  }
  return {
    mode: policy.mode,
    ...check('ok', false, `MTA-STS policy in ${policy.mode} mode, MX ${(policy.mx ?? []).join(', ')}.`, found),
  };
}

async function tlsRptCheck(domain: string, env: DomainCheckEnv): Promise<Check> {
  const name = `_smtp._tls.${domain}`;
  const address = env.reportAddresses?.tls ?? null;
  const publish: PublishRecord[] = address ? [{ type: 'TXT', name, value: `v=TLSRPTv1; rua=mailto:${address}` }] : [];
  const records = await txtRecords(env.resolver, name);
  if (records === null) return check('warning', false, `Could not read ${name} (DNS failure); checked again later.`);
  const rpt = records.filter((r) => /^v=TLSRPTv1\b/i.test(r.trim()));
  if (rpt.length === 0) {
    return check(
      'not_published',
      false,
      `Optional: a TLS-RPT record (RFC 8460) makes other servers report TLS failures delivering to ${domain}.`,
      null,
      publish,
    );
  }
  const found = rpt.join('\n');
  if (rpt.length > 1)
    return check(
      'failing',
      false,
      `${name} has ${rpt.length} TLS-RPT records; senders then send no reports: keep one.`,
      found,
      publish,
    );
  const rua = parseTags(rpt[0]!).get('rua') ?? '';
  const targets = rua
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (
    targets.length === 0 ||
    !targets.every((t) => /^mailto:[^@\s]+@[^@\s]+$/i.test(t) || /^https:\/\/\S+$/i.test(t))
  ) {
    return check('failing', false, `The TLS-RPT record needs rua= with mailto: or https: addresses.`, found, publish);
  }
  const toUs = address !== null && targets.some((t) => t.toLowerCase() === `mailto:${address.toLowerCase()}`);
  return check(
    'ok',
    false,
    toUs ? 'TLS reports come to this server.' : `TLS reports go to ${targets.join(', ')}.`,
    found,
  );
}

/** Runs every check of a domain. `dkim` are the DKIM token results the domain service has just computed. */
export async function runDomainChecks(
  domain: string,
  dkim: DkimTokenResult[],
  env: DomainCheckEnv,
  now: number,
): Promise<DomainChecks> {
  const returnPathApplies = env.inboundEnabled && env.returnPathSubdomain !== '';
  const [spf, dmarc, returnPathMx, mtaSts, tlsRpt] = await Promise.all([
    spfCheck(domain, env),
    dmarcCheck(domain, env),
    returnPathApplies ? returnPathMxCheck(domain, env) : Promise.resolve(undefined),
    mtaStsCheck(domain, env),
    tlsRptCheck(domain, env),
  ]);
  const dkimResult = dkimCheck(dkim);
  const all: Check[] = [dkimResult, spf, dmarc, mtaSts, tlsRpt, ...(returnPathMx ? [returnPathMx] : [])];
  return {
    checked_at: new Date(now).toISOString(),
    status: worstStatus(all.map((c) => (!c.required && c.status === 'not_published' ? 'ok' : c.status))),
    dkim: dkimResult,
    spf,
    dmarc,
    ...(returnPathMx ? { return_path_mx: returnPathMx } : {}),
    mta_sts: mtaSts,
    tls_rpt: tlsRpt,
  };
}

/** The checks of a domain by name, for lists and change detection. */
export const checkStatuses = (checks: DomainChecks): Record<string, CheckStatus> =>
  Object.fromEntries(
    (['dkim', 'spf', 'dmarc', 'return_path_mx', 'mta_sts', 'tls_rpt'] as const).flatMap((k) =>
      checks[k] ? [[k, checks[k].status]] : [],
    ),
  );
