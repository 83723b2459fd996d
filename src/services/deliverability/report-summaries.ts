import { notFound } from '../../shared/errors.js';
import { findDomainByIdOrName, type Domain } from '../../store/domains.js';
import { listDmarcReportRecords, listDmarcReports, listTlsReports } from '../../store/deliverability-reports.js';
import type { ServiceDeps } from '../deps.js';
import { sendingAddresses } from '../../checks/sending-addresses.js';

/**
 * The DMARC aggregate and TLS reports received about a workspace's domain (receiving/
 * aggregate-reports), summarised per day for the API and the dashboard. Mail sent as one of
 * our domains from elsewhere shows up here.
 */

interface DmarcSource {
  source_ip: string;
  /** One of this server's sending addresses. */
  this_server: boolean;
  messages: number;
  /** Raw results: any DKIM signature, and SPF, that passed (aligned or not). */
  dkim_pass: number;
  spf_pass: number;
  /** As evaluated for DMARC: passed and aligned with the From domain. */
  dkim_aligned: number;
  spf_aligned: number;
  /** Passed DMARC (DKIM or SPF aligned). */
  dmarc_pass: number;
  dispositions: Record<string, number>;
  reporters: string[];
}

interface DmarcSummary {
  domain: string;
  since: string;
  reports: number;
  messages: number;
  dmarc_pass: number;
  days: Array<{ date: string; messages: number; dmarc_pass: number; sources: DmarcSource[] }>;
}

interface TlsSummary {
  domain: string;
  since: string;
  reports: number;
  days: Array<{
    date: string;
    successful: number;
    failed: number;
    reporters: string[];
    failures: Array<{
      result_type: string;
      receiving_mx_hostname: string | null;
      sending_mta_ip: string | null;
      sessions: number;
    }>;
  }>;
}

export interface ReportSummaries {
  dmarcSummary(workspaceId: string, idOrName: string, days: number): Promise<DmarcSummary>;
  tlsSummary(workspaceId: string, idOrName: string, days: number): Promise<TlsSummary>;
}

const DAY = 24 * 3600_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export function createReportSummaries(deps: ServiceDeps): ReportSummaries {
  const { db, clock, config, resolver } = deps;

  const findOwn = async (workspaceId: string, idOrName: string): Promise<Domain> => {
    const domain = await findDomainByIdOrName(db, workspaceId, idOrName);
    if (!domain) throw notFound(`Domain ${idOrName}`);
    return domain;
  };

  return {
    async dmarcSummary(workspaceId, idOrName, days) {
      const domain = await findOwn(workspaceId, idOrName);
      const since = clock.now() - days * DAY;
      // Reports about a domain are shown to the workspace that proved it owns it.
      const reports = domain.status === 'verified' ? await listDmarcReports(db, domain.name, since) : [];
      const records = await listDmarcReportRecords(
        db,
        reports.map((r) => r.id),
      );
      let ours = new Set<string>();
      try {
        ours = new Set(await sendingAddresses(config, resolver));
      } catch {
        // Unknown: no source is marked as this server.
      }
      const reportById = new Map(reports.map((r) => [r.id, r]));
      const byDay = new Map<string, Map<string, DmarcSource>>();
      for (const record of records) {
        const report = reportById.get(record.report_id)!;
        const date = dayOf(report.begin_at);
        const sources = byDay.get(date) ?? new Map<string, DmarcSource>();
        byDay.set(date, sources);
        const source = sources.get(record.source_ip) ?? {
          source_ip: record.source_ip,
          this_server: ours.has(record.source_ip),
          messages: 0,
          dkim_pass: 0,
          spf_pass: 0,
          dkim_aligned: 0,
          spf_aligned: 0,
          dmarc_pass: 0,
          dispositions: {},
          reporters: [],
        };
        sources.set(record.source_ip, source);
        const auth = record.auth_results;
        const n = record.count;
        source.messages += n;
        if (auth.dkim.some((d) => d.result === 'pass')) source.dkim_pass += n;
        if (auth.spf.some((s) => s.result === 'pass')) source.spf_pass += n;
        if (record.dkim === 'pass') source.dkim_aligned += n;
        if (record.spf === 'pass') source.spf_aligned += n;
        if (record.dkim === 'pass' || record.spf === 'pass') source.dmarc_pass += n;
        source.dispositions[record.disposition] = (source.dispositions[record.disposition] ?? 0) + n;
        if (!source.reporters.includes(report.org_name)) source.reporters.push(report.org_name);
      }
      const dayList = [...byDay.entries()]
        .sort(([a], [b]) => (a < b ? 1 : -1))
        .map(([date, sources]) => {
          const list = [...sources.values()].sort(
            (a, b) => b.messages - a.messages || (a.source_ip < b.source_ip ? -1 : 1),
          );
          return {
            date,
            messages: list.reduce((s, x) => s + x.messages, 0),
            dmarc_pass: list.reduce((s, x) => s + x.dmarc_pass, 0),
            sources: list,
          };
        });
      return {
        domain: domain.name,
        since: new Date(since).toISOString(),
        reports: reports.length,
        messages: dayList.reduce((s, d) => s + d.messages, 0),
        dmarc_pass: dayList.reduce((s, d) => s + d.dmarc_pass, 0),
        days: dayList,
      };
    },

    async tlsSummary(workspaceId, idOrName, days) {
      const domain = await findOwn(workspaceId, idOrName);
      const since = clock.now() - days * DAY;
      const reports = domain.status === 'verified' ? await listTlsReports(db, domain.name, since) : [];
      const byDay = new Map<string, TlsSummary['days'][number]>();
      for (const report of reports) {
        const date = dayOf(report.begin_at);
        const day = byDay.get(date) ?? { date, successful: 0, failed: 0, reporters: [], failures: [] };
        byDay.set(date, day);
        day.successful += report.successful;
        day.failed += report.failed;
        if (!day.reporters.includes(report.org_name)) day.reporters.push(report.org_name);
        for (const f of report.failures) {
          const same = day.failures.find(
            (x) =>
              x.result_type === f.result_type &&
              x.receiving_mx_hostname === f.receiving_mx_hostname &&
              x.sending_mta_ip === f.sending_mta_ip,
          );
          if (same) same.sessions += f.failed_session_count;
          else
            day.failures.push({
              result_type: f.result_type,
              receiving_mx_hostname: f.receiving_mx_hostname,
              sending_mta_ip: f.sending_mta_ip,
              sessions: f.failed_session_count,
            });
        }
      }
      return {
        domain: domain.name,
        since: new Date(since).toISOString(),
        reports: reports.length,
        days: [...byDay.values()].sort((a, b) => (a.date < b.date ? 1 : -1)),
      };
    },
  };
}
