import { currentActor } from '../shared/actor.js';
import { toIso } from '../shared/clock.js';
import { validationError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { appendAuditEntries, listAuditEntries, ACTOR_TYPES, type AuditEntry } from '../store/audit-log.js';
import { parsePage } from '../store/infra/list-page.js';
import type { ServiceDeps } from './deps.js';
import { isOneOf } from '../shared/one-of.js';

/**
 * The audit log: who (an API key, a dashboard session, the CLI) did what to which object and
 * from where. Entries are appended by the audit trail (audit-trail.ts) in the transaction of
 * the audited use case itself; nothing updates them, and retention deletes them after `retention.auditDays`.
 * Details hold names and addresses that identify the object, never a secret (`safeDetail`).
 */

export interface AuditFact {
  /** null: an instance-wide change. */
  workspaceId: string | null;
  action: string;
  objectType: string;
  objectId: string | null;
  detail?: Record<string, string | number | boolean | null | string[]> | undefined;
}

export interface AuditView {
  object: 'audit_entry';
  id: string;
  created_at: string;
  workspace_id: string | null;
  actor: { type: AuditEntry['actor_type']; id: string | null };
  action: string;
  object_type: string;
  object_id: string | null;
  detail: Record<string, unknown> | null;
  client_address: string | null;
}

export interface AuditService {
  record(fact: AuditFact): Promise<void>;
  /**
   * A page, newest first; filters: `action` (exact, or a prefix ending in "."), `actor_type`,
   * `actor_id`, `object_type`, `object_id`, `since` and `until` (ISO 8601 times; since inclusive).
   */
  list(
    scope: { workspaceId: string | null; instance: boolean },
    query: Record<string, unknown>,
  ): Promise<{ object: 'list'; has_more: boolean; data: AuditView[] }>;
}

/** Keys whose values are never kept, whatever a fact's author passed. */
const SECRET_KEY = /secret|token|password|passphrase|api_?key|private|authorization|cookie/i;
const MAX_DETAIL_STRING = 500;

/** The detail as stored: secret-named keys dropped, strings cut, URLs without credentials or query. */
function safeDetail(detail: AuditFact['detail']): Record<string, unknown> | null {
  if (!detail) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(detail)) {
    if (SECRET_KEY.test(key) || value === undefined) continue;
    out[key] = Array.isArray(value)
      ? value.slice(0, 50).map((v) => String(v).slice(0, MAX_DETAIL_STRING))
      : typeof value === 'string'
        ? value.slice(0, MAX_DETAIL_STRING)
        : value;
  }
  return Object.keys(out).length > 0 ? out : null;
}

/** A URL as the audit log shows it: scheme, host and path; a query or user info may hold a token. */
export const urlForAudit = (url: string): string => {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
};

const view = (e: AuditEntry): AuditView => ({
  object: 'audit_entry',
  id: e.id,
  created_at: toIso(e.created_at),
  workspace_id: e.workspace_id,
  actor: { type: e.actor_type, id: e.actor_id },
  action: e.action,
  object_type: e.object_type,
  object_id: e.object_id,
  detail: e.detail,
  client_address: e.client_address,
});

const text = (query: Record<string, unknown>, field: string): string | undefined => {
  const v = query[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > 200)
    throw validationError(field, 'must be a non-empty string of at most 200 characters');
  return v;
};

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** An ISO 8601 time as epoch milliseconds; without a zone it is UTC (a date alone: its midnight). */
const time = (query: Record<string, unknown>, field: string): number | undefined => {
  const v = text(query, field);
  if (v === undefined) return undefined;
  const zoned = v.includes('T') && !/(Z|[+-]\d{2}:\d{2})$/.test(v) ? `${v}Z` : v;
  const ms = ISO_TIME.test(v) ? Date.parse(zoned) : NaN;
  if (!Number.isFinite(ms))
    throw validationError(field, 'must be an ISO 8601 time, e.g. 2026-11-28 or 2026-11-28T09:30:00Z');
  return ms;
};

export function createAuditService(deps: ServiceDeps): AuditService {
  const { db, clock } = deps;
  return {
    async record(fact) {
      const actor = currentActor();
      await appendAuditEntries(db, [
        {
          id: newId(),
          workspace_id: fact.workspaceId,
          actor_type: actor.type,
          actor_id: actor.id,
          action: fact.action,
          object_type: fact.objectType,
          object_id: fact.objectId,
          detail: safeDetail(fact.detail),
          client_address: actor.address,
          created_at: clock.now(),
        },
      ]);
    },

    async list(scope, query) {
      const actorType = text(query, 'actor_type');
      if (actorType !== undefined && !isOneOf(ACTOR_TYPES, actorType))
        throw validationError('actor_type', `must be one of ${ACTOR_TYPES.join(', ')}`);
      const since = time(query, 'since');
      const until = time(query, 'until');
      if (since !== undefined && until !== undefined && until <= since)
        throw validationError('until', 'must be later than since');
      const { rows, more } = await listAuditEntries(
        db,
        {
          workspaceId: scope.workspaceId,
          instance: scope.instance,
          action: text(query, 'action'),
          actorType,
          actorId: text(query, 'actor_id'),
          objectType: text(query, 'object_type'),
          objectId: text(query, 'object_id'),
          since,
          until,
        },
        parsePage(query, 'keyset'),
      );
      return { object: 'list', has_more: more, data: rows.map(view) };
    },
  };
}
