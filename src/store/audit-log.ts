import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { AuditLogTable } from './tables/audit.js';

export { ACTOR_TYPES, type ActorType } from './tables/audit.js';

const auditRows = rowCodec<Selectable<AuditLogTable>>()({ detail: jsonOrNull<Record<string, unknown>>() });
/** One change someone made: who, what, to which object, from where. */
export type AuditEntry = EntityOf<typeof auditRows>;

/** Appends entries; the audit log has no update, and only retention deletes from it. */
export const appendAuditEntries = async (db: Db, entries: AuditEntry[]): Promise<void> => {
  if (entries.length > 0)
    await db
      .insertInto('audit_log')
      .values(entries.map((e) => auditRows.encode(e)))
      .execute();
};

interface AuditFilter {
  /** A workspace's entries and, with `instance`, the instance-wide ones too (master keys, the CLI). */
  workspaceId: string | null;
  instance?: boolean;
  action?: string | undefined;
  actorType?: string | undefined;
  objectId?: string | undefined;
  objectType?: string | undefined;
  actorId?: string | undefined;
  /** Epoch milliseconds: entries at or after `since`, before `until`. */
  since?: number | undefined;
  until?: number | undefined;
}

/** A page of the audit log, newest first (keyset on the time-ordered id). */
export async function listAuditEntries(db: Db, filter: AuditFilter, page: ListPage): Promise<PageOf<AuditEntry>> {
  let q = db.selectFrom('audit_log').selectAll();
  if (filter.workspaceId !== null) {
    const ws = filter.workspaceId;
    q = filter.instance
      ? q.where((eb) => eb.or([eb('workspace_id', '=', ws), eb('workspace_id', 'is', null)]))
      : q.where('workspace_id', '=', ws);
  }
  if (filter.action)
    q = filter.action.endsWith('.')
      ? q.where('action', 'like', `${filter.action.replace(/[%_\\]/g, '')}%`)
      : q.where('action', '=', filter.action);
  if (filter.actorType) q = q.where('actor_type', '=', filter.actorType as AuditEntry['actor_type']);
  if (filter.objectId) q = q.where('object_id', '=', filter.objectId);
  if (filter.objectType) q = q.where('object_type', '=', filter.objectType);
  if (filter.actorId) q = q.where('actor_id', '=', filter.actorId);
  if (filter.since !== undefined) q = q.where('created_at', '>=', filter.since);
  if (filter.until !== undefined) q = q.where('created_at', '<', filter.until);
  return auditRows.decodePage(await readPage(q, 'id', page));
}

/** Entries older than `cutoff` (retention.auditDays). */
export async function deleteAuditEntriesBefore(db: Db, cutoff: number): Promise<number> {
  const r = await db.deleteFrom('audit_log').where('created_at', '<', cutoff).executeTakeFirst();
  return Number(r.numDeletedRows);
}
