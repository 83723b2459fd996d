import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { Workflow, WorkflowStatus, WorkflowsTable, WorkflowVersionsTable } from './tables.js';

/** Workflow definitions and their versions. */

export async function saveWorkflow(db: Db, row: Workflow, version: WorkflowVersionsTable): Promise<void> {
  await db.insertInto('workflows').values(row).execute();
  await db.insertInto('workflow_versions').values(version).execute();
}

export const saveWorkflowVersion = async (db: Db, version: WorkflowVersionsTable): Promise<void> => {
  await db.insertInto('workflow_versions').values(version).execute();
};

export const findWorkflow = (db: Db, workspaceId: string, id: string): Promise<Workflow | undefined> =>
  db.selectFrom('workflows').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const findWorkflowVersion = (db: Db, id: string): Promise<WorkflowVersionsTable | undefined> =>
  db.selectFrom('workflow_versions').selectAll().where('id', '=', id).executeTakeFirst();

export const updateWorkflow = async (db: Db, id: string, changes: Partial<Omit<WorkflowsTable, 'id' | 'workspace_id'>>): Promise<void> => {
  await db.updateTable('workflows').set(changes).where('id', '=', id).execute();
};

/** Removes a workflow with its versions, runs and their steps (foreign keys cascade). */
export const removeWorkflow = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number((await db.deleteFrom('workflows').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows) > 0;

/** Keyset page, newest first (ids are UUIDv7); one extra row says whether more exist. */
export function listWorkflowsPage(db: Db, q: { workspaceId: string; status?: WorkflowStatus | undefined }, page: ListPage): Promise<PageOf<Workflow>> {
  let query = db.selectFrom('workflows').selectAll().where('workspace_id', '=', q.workspaceId);
  if (q.status) query = query.where('status', '=', q.status);
  return readPage(query, 'id', page);
}

/** The enabled workflows an event of this name starts. */
export const listEnabledWorkflowsFor = (db: Db, workspaceId: string, eventName: string): Promise<Workflow[]> =>
  db.selectFrom('workflows').selectAll().where('workspace_id', '=', workspaceId).where('trigger_event', '=', eventName).where('status', '=', 'enabled').orderBy('id').execute();

/** Whether an event of this name would start or resume anything in the workspace. */
export async function hasWorkflowListener(db: Db, workspaceId: string, eventName: string): Promise<boolean> {
  const starts = await db
    .selectFrom('workflows')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('trigger_event', '=', eventName)
    .where('status', '=', 'enabled')
    .limit(1)
    .executeTakeFirst();
  if (starts) return true;
  const waits = await db.selectFrom('workflow_runs').select('id').where('workspace_id', '=', workspaceId).where('wait_event', '=', eventName).limit(1).executeTakeFirst();
  return waits !== undefined;
}
