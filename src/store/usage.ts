import type { Db } from './infra/db.js';

/** What a workspace has used, for Resend's `usage.get`: rows counted, some since a moment. */

const count = async (query: { executeTakeFirstOrThrow(): Promise<{ n: number | string | bigint }> }): Promise<number> =>
  Number((await query.executeTakeFirstOrThrow()).n);

export const countEmailsSince = (db: Db, workspaceId: string, since: number): Promise<number> =>
  count(
    db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('created_at', '>=', since)
      .where('test', '=', 0),
  );

export const countReceivedSince = (db: Db, workspaceId: string, since: number): Promise<number> =>
  count(
    db
      .selectFrom('received_emails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('created_at', '>=', since),
  );

export const countWorkflowRunsSince = (db: Db, workspaceId: string, since: number): Promise<number> =>
  count(
    db
      .selectFrom('workflow_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('created_at', '>=', since),
  );

export const countRows = (
  db: Db,
  table: 'subscribers' | 'audiences' | 'campaigns' | 'domains',
  workspaceId: string,
): Promise<number> =>
  count(
    db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', workspaceId),
  );
