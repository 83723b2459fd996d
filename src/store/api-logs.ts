import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { ApiLogsTable } from './tables/requests.js';

const logRows = rowCodec<Selectable<ApiLogsTable>>()({
  request_body: jsonOrNull<unknown>(),
  response_body: jsonOrNull<unknown>(),
});
/** One authenticated API request (Resend's logs), its bodies decoded. */
export type ApiLog = EntityOf<typeof logRows>;
/**
 * A log as written: its bodies are the JSON text shared/redact-body.ts made of them (it
 * measures that text to cut what is long), kept as they are.
 */
export type NewApiLog = Omit<ApiLog, 'request_body' | 'response_body'> & {
  request_body: string | null;
  response_body: string | null;
};

export const saveApiLogs = async (db: Db, logs: NewApiLog[]): Promise<void> => {
  if (logs.length > 0) await db.insertInto('api_logs').values(logs).execute();
};

/** A page of a workspace's request logs, newest first, without the bodies. */
export const listApiLogs = (
  db: Db,
  workspaceId: string,
  page: ListPage,
): Promise<PageOf<Omit<ApiLog, 'request_body' | 'response_body'>>> =>
  readPage(
    db
      .selectFrom('api_logs')
      .select([
        'id',
        'workspace_id',
        'credential_id',
        'request_id',
        'method',
        'endpoint',
        'response_status',
        'user_agent',
        'created_at',
      ])
      .where('workspace_id', '=', workspaceId),
    'id',
    page,
  );

export const findApiLog = async (db: Db, workspaceId: string, id: string): Promise<ApiLog | undefined> => {
  const row = await db
    .selectFrom('api_logs')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && logRows.decode(row);
};
