import { toIso } from '../shared/clock.js';
import { notFound } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import { redactBody } from '../shared/redact-body.js';
import { findApiLog, listApiLogs, saveApiLogs, type ApiLog, type NewApiLog } from '../store/api-logs.js';
import { Collector, type CommitBatcher } from '../store/infra/commit-batcher.js';
import { parsePage } from '../store/infra/list-page.js';
import type { ServiceDeps } from './deps.js';

/** Every authenticated API request of a workspace, as Resend's `logs` shows them. */

interface ApiRequestRecord {
  workspaceId: string;
  credentialId: string | null;
  requestId: string | null;
  method: string;
  endpoint: string;
  status: number;
  userAgent: string | null;
  requestBody: unknown;
  responseBody: unknown;
}

interface LogSummary {
  id: string;
  created_at: string;
  endpoint: string;
  method: string;
  response_status: number;
  user_agent: string | null;
}

export interface ApiLogService {
  record(entry: ApiRequestRecord): Promise<void>;
  list(
    workspaceId: string,
    query: Record<string, unknown>,
  ): Promise<{ object: 'list'; has_more: boolean; data: LogSummary[] }>;
  get(
    workspaceId: string,
    id: string,
  ): Promise<LogSummary & { object: 'log'; request_id: string | null; request_body: unknown; response_body: unknown }>;
}

const MAX_USER_AGENT = 512;
const MAX_ENDPOINT = 2048;

const summary = (r: Omit<ApiLog, 'request_body' | 'response_body'>): LogSummary => ({
  id: r.id,
  created_at: toIso(r.created_at),
  endpoint: r.endpoint,
  method: r.method,
  response_status: r.response_status,
  user_agent: r.user_agent,
});

export function createApiLogService(deps: ServiceDeps & { batcher: CommitBatcher }): ApiLogService {
  const { db, clock } = deps;
  // Requests answered together share one multi-row insert, off the foreground lane: a log row
  // never delays a send.
  const collector = new Collector<NewApiLog>(deps.batcher, saveApiLogs, { windowMs: 20, max: 200 });
  return {
    record(e) {
      return collector.add({
        id: newId(),
        workspace_id: e.workspaceId,
        credential_id: e.credentialId,
        request_id: e.requestId,
        method: e.method,
        endpoint: e.endpoint.slice(0, MAX_ENDPOINT),
        response_status: e.status,
        user_agent: e.userAgent ? e.userAgent.slice(0, MAX_USER_AGENT) : null,
        request_body: redactBody(e.requestBody),
        response_body: redactBody(e.responseBody),
        created_at: clock.now(),
      });
    },

    async list(workspaceId, query) {
      const { rows, more } = await listApiLogs(db, workspaceId, parsePage(query, 'keyset'));
      return { object: 'list', has_more: more, data: rows.map(summary) };
    },

    async get(workspaceId, id) {
      const row = isUuid(id) ? await findApiLog(db, workspaceId, id.toLowerCase()) : undefined;
      if (!row) throw notFound(`Log ${id}`);
      return {
        object: 'log',
        ...summary(row),
        request_id: row.request_id,
        request_body: row.request_body,
        response_body: row.response_body,
      };
    },
  };
}
