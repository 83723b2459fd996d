import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { ApiLog } from './tables.js';

export const saveApiLogs = async (db: Db, rows: ApiLog[]): Promise<void> => {
  if (rows.length > 0) await db.insertInto('api_logs').values(rows).execute();
};

/** A page of a workspace's request logs, newest first, without the bodies. */
export const listApiLogs = (db: Db, workspaceId: string, page: ListPage): Promise<PageOf<Omit<ApiLog, 'request_body' | 'response_body'>>> =>
  readPage(
    db
      .selectFrom('api_logs')
      .select(['id', 'workspace_id', 'credential_id', 'request_id', 'method', 'endpoint', 'response_status', 'user_agent', 'created_at'])
      .where('workspace_id', '=', workspaceId),
    'id',
    page,
  );

export const findApiLog = (db: Db, workspaceId: string, id: string): Promise<ApiLog | undefined> =>
  db.selectFrom('api_logs').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
