import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { DmarcReportRecordsTable, DmarcReportsTable, TlsReportsTable } from './tables/deliverability.js';

/** DMARC aggregate and TLS reports received about our domains. A report seen before is not stored again. */

/** The policy a DMARC receiver saw published. */
interface DmarcPolicy {
  p: string | null;
  sp: string | null;
  pct: number | null;
  adkim: string | null;
  aspf: string | null;
}

/** A DMARC record's raw (unaligned) DKIM and SPF results. */
interface DmarcAuthResults {
  dkim: Array<{ domain: string; selector: string | null; result: string }>;
  spf: Array<{ domain: string; scope: string | null; result: string }>;
}

/** One failure line of a TLS report's policy (RFC 8460 §4.3). */
interface TlsReportFailure {
  result_type: string;
  sending_mta_ip: string | null;
  receiving_mx_hostname: string | null;
  receiving_ip: string | null;
  failed_session_count: number;
  failure_reason_code: string | null;
}

const dmarcReports = rowCodec<Selectable<DmarcReportsTable>>()({ policy: json<DmarcPolicy>() });
const dmarcRecords = rowCodec<Selectable<DmarcReportRecordsTable>>()({ auth_results: json<DmarcAuthResults>() });
const tlsReports = rowCodec<Selectable<TlsReportsTable>>()({ failures: json<TlsReportFailure[]>() });

type DmarcReport = EntityOf<typeof dmarcReports>;
type DmarcReportRecord = EntityOf<typeof dmarcRecords>;
type TlsReport = EntityOf<typeof tlsReports>;

export async function saveDmarcReport(db: Db, report: DmarcReport, records: DmarcReportRecord[]): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('dmarc_reports')
      .values(dmarcReports.encode(report))
      .onConflict((oc) => oc.columns(['org_name', 'report_id', 'domain']).doNothing())
      .returning('id')
      .execute();
    if (inserted.length === 0) return false;
    for (let i = 0; i < records.length; i += 200)
      await trx
        .insertInto('dmarc_report_records')
        .values(records.slice(i, i + 200).map((r) => dmarcRecords.encode(r)))
        .execute();
    return true;
  });
}

export async function saveTlsReports(db: Db, reports: TlsReport[]): Promise<number> {
  let saved = 0;
  await db.transaction().execute(async (trx) => {
    for (const report of reports) {
      const inserted = await trx
        .insertInto('tls_reports')
        .values(tlsReports.encode(report))
        .onConflict((oc) => oc.columns(['org_name', 'report_id', 'domain', 'policy_type']).doNothing())
        .returning('id')
        .execute();
      saved += inserted.length;
    }
  });
  return saved;
}

/** Whether any workspace has this domain verified: reports about other domains are not kept. */
export async function isVerifiedDomainName(db: Db, name: string): Promise<boolean> {
  const row = await db
    .selectFrom('domains')
    .select('id')
    .where('name', '=', name)
    .where('status', '=', 'verified')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export const listDmarcReports = async (db: Db, domain: string, since: number): Promise<DmarcReport[]> =>
  dmarcReports.decodeAll(
    await db
      .selectFrom('dmarc_reports')
      .selectAll()
      .where('domain', '=', domain)
      .where('begin_at', '>=', since)
      .orderBy('begin_at')
      .orderBy('id')
      .execute(),
  );

export const listDmarcReportRecords = async (db: Db, reportIds: string[]): Promise<DmarcReportRecord[]> =>
  reportIds.length === 0
    ? []
    : dmarcRecords.decodeAll(
        await db
          .selectFrom('dmarc_report_records')
          .selectAll()
          .where('report_id', 'in', reportIds)
          .orderBy('report_id')
          .orderBy('position')
          .execute(),
      );

export const listTlsReports = async (db: Db, domain: string, since: number): Promise<TlsReport[]> =>
  tlsReports.decodeAll(
    await db
      .selectFrom('tls_reports')
      .selectAll()
      .where('domain', '=', domain)
      .where('begin_at', '>=', since)
      .orderBy('begin_at')
      .orderBy('id')
      .execute(),
  );

/** Reports received before `cutoff` (retention). */
export async function deleteReportsBefore(db: Db, cutoff: number): Promise<number> {
  const a = await db.deleteFrom('dmarc_reports').where('received_at', '<', cutoff).executeTakeFirst();
  const b = await db.deleteFrom('tls_reports').where('received_at', '<', cutoff).executeTakeFirst();
  return Number(a.numDeletedRows) + Number(b.numDeletedRows);
}
