import type { Clock } from '../../shared/clock.js';
import { newId } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import { parseMail } from '../../shared/parse-mail.js';
import type { Db } from '../../store/infra/db.js';
import { isVerifiedDomainName, saveDmarcReport, saveTlsReports } from '../../store/deliverability-reports.js';
import type { InboundKind } from '../inbound-kind.js';
import {
  parseDmarcReport,
  parseTlsReport,
  ReportError,
  unpack,
  type DmarcAggregate,
  type TlsReport,
} from './parse-aggregate-reports.js';

interface AggregateReportDeps {
  db: Db;
  clock: Clock;
  /** The addresses reports are mailed to (`dmarc@` and `tls-reports@` the report domain), when there is a report domain. */
  addresses: { dmarc: string; tls: string } | null;
  logger: Logger;
}

/**
 * DMARC aggregate reports and TLS reports mailed to this server, the second kind the inbound
 * listener asks: each attachment is unpacked, parsed and stored when it is about a verified
 * domain (services/deliverability/report-summaries.ts summarises them).
 */
export function aggregateReportKind(deps: AggregateReportDeps): InboundKind<true> {
  const { db, clock } = deps;
  const log = deps.logger.child({ component: 'aggregate-reports' });
  const accepted = new Set(deps.addresses ? [deps.addresses.dmarc, deps.addresses.tls] : []);

  const storeDmarc = async (report: DmarcAggregate, now: number): Promise<boolean> => {
    const id = newId();
    return saveDmarcReport(
      db,
      {
        id,
        domain: report.domain,
        org_name: report.orgName,
        report_id: report.reportId,
        reporter_email: report.email,
        begin_at: report.begin,
        end_at: report.end,
        policy: report.policy,
        messages: report.records.reduce((sum, r) => sum + r.count, 0),
        received_at: now,
      },
      report.records.map((r, position) => ({
        report_id: id,
        position,
        source_ip: r.sourceIp,
        count: r.count,
        disposition: r.disposition,
        dkim: r.dkim,
        spf: r.spf,
        header_from: r.headerFrom,
        envelope_from: r.envelopeFrom,
        auth_results: r.authResults,
      })),
    );
  };

  const storeTls = async (report: TlsReport, now: number): Promise<number> => {
    const ours: TlsReport['policies'] = [];
    for (const p of report.policies) if (await isVerifiedDomainName(db, p.domain)) ours.push(p);
    return saveTlsReports(
      db,
      ours.map((p) => ({
        id: newId(),
        domain: p.domain,
        org_name: report.orgName,
        report_id: report.reportId,
        contact: report.contact,
        begin_at: report.begin,
        end_at: report.end,
        policy_type: p.policyType,
        successful: p.successful,
        failed: p.failed,
        failures: p.failures,
        received_at: now,
      })),
    );
  };

  return {
    name: 'aggregate-reports',
    claim: async (address) => (accepted.has(address.toLowerCase()) ? true : null),

    async receive({ raw }) {
      const parsed = await parseMail(raw, {
        skipHtmlToText: true,
        skipTextToHtml: true,
        skipImageLinks: true,
        skipTextLinks: true,
      });
      const parts = parsed.attachments.map((a) => a.content);
      // Some reporters send the report as the body of a single-part message.
      if (parts.length === 0 && parsed.text) parts.push(Buffer.from(parsed.text));
      const now = clock.now();
      let dmarc = 0;
      let tls = 0;
      let ignored = 0;
      const problems: string[] = [];
      for (const part of parts) {
        try {
          const first = unpack(part, '.xml').subarray(0, 200).toString('utf8').trimStart();
          if (first.startsWith('<')) {
            const report = parseDmarcReport(unpack(part, '.xml'));
            if (!(await isVerifiedDomainName(db, report.domain))) ignored++;
            else if (await storeDmarc(report, now)) dmarc++;
            else ignored++;
          } else if (first.startsWith('{')) {
            const n = await storeTls(parseTlsReport(unpack(part, '.json')), now);
            if (n > 0) tls++;
            else ignored++;
          }
        } catch (err) {
          if (!(err instanceof ReportError)) throw err;
          problems.push(err.message);
        }
      }
      if (dmarc + tls > 0) {
        log.info({ dmarc, tls }, 'deliverability reports stored');
        return {
          kind: 'accepted',
          reply: `2.0.0 Ok: ${dmarc} DMARC and ${tls} TLS report(s) stored`,
          log: { outcome: 'stored', dmarc, tls },
        };
      }
      if (ignored > 0)
        return {
          kind: 'accepted',
          reply:
            '2.0.0 Ok: nothing to do (the reports are about no verified domain of this server, or were received before)',
          log: { outcome: 'ignored' },
        };
      return {
        kind: 'refused',
        code: 550,
        reason: `5.6.0 ${problems.length > 0 ? `unreadable report: ${problems[0]}` : 'no DMARC aggregate report (XML) or TLS report (JSON) attached'}`,
      };
    },
  };
}
