import type { Db } from './db.js';
import type { DmarcReport, DmarcReportRecord, TlsReport } from './tables.js';

/** DMARC aggregate and TLS reports received about our domains. A report seen before is not stored again. */

export async function saveDmarcReport(db: Db, report: DmarcReport, records: DmarcReportRecord[]): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('dmarc_reports')
      .values(report)
      .onConflict((oc) => oc.columns(['org_name', 'report_id', 'domain']).doNothing())
      .returning('id')
      .execute();
    if (inserted.length === 0) return false;
    for (let i = 0; i < records.length; i += 200) await trx.insertInto('dmarc_report_records').values(records.slice(i, i + 200)).execute();
    return true;
  });
}

export async function saveTlsReports(db: Db, reports: TlsReport[]): Promise<number> {
  let saved = 0;
  await db.transaction().execute(async (trx) => {
    for (const report of reports) {
      const inserted = await trx
        .insertInto('tls_reports')
        .values(report)
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
  const row = await db.selectFrom('domains').select('id').where('name', '=', name).where('status', '=', 'verified').limit(1).executeTakeFirst();
  return row !== undefined;
}

export const listDmarcReports = (db: Db, domain: string, since: number): Promise<DmarcReport[]> =>
  db.selectFrom('dmarc_reports').selectAll().where('domain', '=', domain).where('begin_at', '>=', since).orderBy('begin_at').orderBy('id').execute();

export const listDmarcReportRecords = (db: Db, reportIds: string[]): Promise<DmarcReportRecord[]> =>
  reportIds.length === 0 ? Promise.resolve([]) : db.selectFrom('dmarc_report_records').selectAll().where('report_id', 'in', reportIds).orderBy('report_id').orderBy('position').execute();

export const listTlsReports = (db: Db, domain: string, since: number): Promise<TlsReport[]> =>
  db.selectFrom('tls_reports').selectAll().where('domain', '=', domain).where('begin_at', '>=', since).orderBy('begin_at').orderBy('id').execute();

/** Reports received before `cutoff` (retention). */
export async function deleteReportsBefore(db: Db, cutoff: number): Promise<number> {
  const a = await db.deleteFrom('dmarc_reports').where('received_at', '<', cutoff).executeTakeFirst();
  const b = await db.deleteFrom('tls_reports').where('received_at', '<', cutoff).executeTakeFirst();
  return Number(a.numDeletedRows) + Number(b.numDeletedRows);
}
