import { gunzipSync } from 'node:zlib';
import { XMLParser } from 'fast-xml-parser';
import { unzipSync } from 'fflate';
import ipaddr from 'ipaddr.js';

/**
 * Reading DMARC aggregate reports (RFC 7489 §7.2, appendix C: XML, sent gzip'd or zipped)
 * and SMTP TLS reports (RFC 8460 §4: JSON, usually gzip'd). Pure: bytes in, records out;
 * nothing here trusts the sender (sizes capped, values checked, unknown fields dropped).
 */

/** Decompressed reports larger than this are refused (a zip bomb, not a report). */
const MAX_REPORT_BYTES = 20 * 1024 * 1024;
/** Rows a DMARC report may carry; real ones carry dozens. */
const MAX_RECORDS = 10_000;

export class ReportError extends Error {}

const GZIP = [0x1f, 0x8b];
const ZIP = [0x50, 0x4b, 0x03, 0x04];
const startsWith = (data: Uint8Array, magic: number[]) => magic.every((b, i) => data[i] === b);

/** The report document inside an attachment: gunzipped, unzipped (first file of the wanted kind) or as is. */
export function unpack(data: Buffer, extension: '.xml' | '.json'): Buffer {
  if (startsWith(data, GZIP)) {
    try {
      return gunzipSync(data, { maxOutputLength: MAX_REPORT_BYTES });
    } catch (err) {
      throw new ReportError(`cannot gunzip the report: ${(err as Error).message}`);
    }
  }
  if (startsWith(data, ZIP)) {
    let files: Record<string, Uint8Array>;
    try {
      let total = 0;
      files = unzipSync(data, {
        filter: (file) => {
          total += file.originalSize;
          if (total > MAX_REPORT_BYTES) throw new ReportError(`the zip holds more than ${MAX_REPORT_BYTES} bytes`);
          return file.name.toLowerCase().endsWith(extension);
        },
      });
    } catch (err) {
      throw err instanceof ReportError ? err : new ReportError(`cannot unzip the report: ${(err as Error).message}`);
    }
    const first = Object.values(files)[0];
    if (!first) throw new ReportError(`the zip holds no ${extension} file`);
    return Buffer.from(first);
  }
  if (data.length > MAX_REPORT_BYTES) throw new ReportError(`the report is larger than ${MAX_REPORT_BYTES} bytes`);
  return data;
}

interface DmarcRecord {
  sourceIp: string;
  count: number;
  disposition: string;
  /** DKIM and SPF as evaluated for DMARC: pass only when aligned. */
  dkim: string;
  spf: string;
  headerFrom: string | null;
  envelopeFrom: string | null;
  /** The raw (unaligned) results. */
  authResults: {
    dkim: Array<{ domain: string; selector: string | null; result: string }>;
    spf: Array<{ domain: string; scope: string | null; result: string }>;
  };
}

export interface DmarcAggregate {
  orgName: string;
  reportId: string;
  email: string | null;
  begin: number;
  end: number;
  domain: string;
  policy: { p: string | null; sp: string | null; pct: number | null; adkim: string | null; aspf: string | null };
  records: DmarcRecord[];
}

// Lists in the schema (appendix C) even when they hold one element; policy_evaluated/dkim is not one.
const LISTS = new Set(['feedback.record', 'feedback.record.auth_results.dkim', 'feedback.record.auth_results.spf']);
const xml = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  trimValues: true,
  isArray: (_name, jpath) => LISTS.has(String(jpath)),
});

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown, max = 255): string | null =>
  typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, max) : typeof v === 'number' ? String(v) : null;
const lower = (v: unknown): string | null => text(v)?.toLowerCase() ?? null;
const count = (v: unknown): number => {
  const n = Number(text(v));
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
};
const epochSeconds = (v: unknown, what: string): number => {
  const n = Number(text(v));
  if (!Number.isSafeInteger(n) || n <= 0) throw new ReportError(`${what} is not a Unix time`);
  return n * 1000;
};

export function parseDmarcReport(document: Buffer): DmarcAggregate {
  let root: Node;
  try {
    root = xml.parse(document.toString('utf8')) as Node;
  } catch (err) {
    throw new ReportError(`not XML: ${(err as Error).message}`);
  }
  const feedback = root.feedback;
  if (!isNode(feedback)) throw new ReportError('not a DMARC aggregate report (no <feedback>)');
  const meta = isNode(feedback.report_metadata) ? feedback.report_metadata : {};
  const policy = isNode(feedback.policy_published) ? feedback.policy_published : {};
  const range = isNode(meta.date_range) ? meta.date_range : {};
  const orgName = text(meta.org_name);
  const reportId = text(meta.report_id);
  const domain = lower(policy.domain);
  if (!orgName || !reportId || !domain)
    throw new ReportError('the report lacks org_name, report_id or policy_published/domain');
  const rows = Array.isArray(feedback.record) ? feedback.record : [];
  if (rows.length > MAX_RECORDS) throw new ReportError(`the report has more than ${MAX_RECORDS} records`);
  const records: DmarcRecord[] = [];
  for (const record of rows) {
    if (!isNode(record) || !isNode(record.row)) continue;
    const row = record.row;
    const ip = text(row.source_ip);
    if (!ip || !ipaddr.isValid(ip)) continue;
    const evaluated = isNode(row.policy_evaluated) ? row.policy_evaluated : {};
    const identifiers = isNode(record.identifiers) ? record.identifiers : {};
    const auth = isNode(record.auth_results) ? record.auth_results : {};
    records.push({
      sourceIp: ipaddr.process(ip).toString(),
      count: count(row.count),
      disposition: lower(evaluated.disposition) ?? 'none',
      dkim: lower(evaluated.dkim) ?? 'fail',
      spf: lower(evaluated.spf) ?? 'fail',
      headerFrom: lower(identifiers.header_from),
      envelopeFrom: lower(identifiers.envelope_from),
      authResults: {
        dkim: (Array.isArray(auth.dkim) ? auth.dkim : []).filter(isNode).map((d) => ({
          domain: lower(d.domain) ?? '',
          selector: text(d.selector),
          result: lower(d.result) ?? 'none',
        })),
        spf: (Array.isArray(auth.spf) ? auth.spf : [])
          .filter(isNode)
          .map((s) => ({ domain: lower(s.domain) ?? '', scope: lower(s.scope), result: lower(s.result) ?? 'none' })),
      },
    });
  }
  const pct = text(policy.pct);
  return {
    orgName,
    reportId,
    email: text(meta.email),
    begin: epochSeconds(range.begin, 'date_range/begin'),
    end: epochSeconds(range.end, 'date_range/end'),
    domain,
    policy: {
      p: lower(policy.p),
      sp: lower(policy.sp),
      pct: pct === null ? null : count(pct),
      adkim: lower(policy.adkim),
      aspf: lower(policy.aspf),
    },
    records,
  };
}

interface TlsFailure {
  result_type: string;
  sending_mta_ip: string | null;
  receiving_mx_hostname: string | null;
  receiving_ip: string | null;
  failed_session_count: number;
  failure_reason_code: string | null;
}

interface TlsPolicyResult {
  domain: string;
  policyType: string;
  successful: number;
  failed: number;
  failures: TlsFailure[];
}

export interface TlsReport {
  orgName: string;
  reportId: string;
  contact: string | null;
  begin: number;
  end: number;
  policies: TlsPolicyResult[];
}

const isoTime = (v: unknown, what: string): number => {
  const ms = typeof v === 'string' ? Date.parse(v) : NaN;
  if (!Number.isFinite(ms)) throw new ReportError(`${what} is not an RFC 3339 date-time`);
  return ms;
};

export function parseTlsReport(document: Buffer): TlsReport {
  let root: unknown;
  try {
    root = JSON.parse(document.toString('utf8'));
  } catch (err) {
    throw new ReportError(`not JSON: ${(err as Error).message}`);
  }
  if (!isNode(root)) throw new ReportError('not a TLS report (not a JSON object)');
  const range = isNode(root['date-range']) ? root['date-range'] : {};
  const orgName = text(root['organization-name']);
  const reportId = text(root['report-id']);
  if (!orgName || !reportId || !Array.isArray(root.policies))
    throw new ReportError('the report lacks organization-name, report-id or policies');
  const policies: TlsPolicyResult[] = [];
  for (const entry of root.policies.slice(0, 1000)) {
    if (!isNode(entry) || !isNode(entry.policy)) continue;
    const domain = lower(entry.policy['policy-domain']);
    if (!domain) continue;
    const summary = isNode(entry.summary) ? entry.summary : {};
    const details = Array.isArray(entry['failure-details']) ? entry['failure-details'] : [];
    policies.push({
      domain,
      policyType: lower(entry.policy['policy-type']) ?? 'no-policy-found',
      successful: count(summary['total-successful-session-count']),
      failed: count(summary['total-failure-session-count']),
      failures: details
        .filter(isNode)
        .slice(0, 1000)
        .map((d) => ({
          result_type: lower(d['result-type']) ?? 'unknown',
          sending_mta_ip: text(d['sending-mta-ip']),
          receiving_mx_hostname: lower(d['receiving-mx-hostname']),
          receiving_ip: text(d['receiving-ip']),
          failed_session_count: count(d['failed-session-count']),
          failure_reason_code: text(d['failure-reason-code']),
        })),
    });
  }
  return {
    orgName,
    reportId,
    contact: text(root['contact-info']),
    begin: isoTime(range['start-datetime'], 'date-range/start-datetime'),
    end: isoTime(range['end-datetime'], 'date-range/end-datetime'),
    policies,
  };
}
