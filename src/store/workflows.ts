import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { flag, json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { WorkflowStatus, WorkflowsTable, WorkflowVersionsTable } from './tables/workflows.js';

export {
  WORKFLOW_RUN_STATUSES,
  WORKFLOW_RUN_STEP_STATUSES,
  WORKFLOW_STATUSES,
  type WorkflowRunStatus,
  type WorkflowRunStepStatus,
  type WorkflowStatus,
  type WorkflowStepState,
} from './tables/workflows.js';

/** Workflow definitions and their versions. */

const workflowRows = rowCodec<Selectable<WorkflowsTable>>()({ allow_reentry: flag });
/** A workflow (Resend's automation): its trigger, status and current version. */
export type Workflow = EntityOf<typeof workflowRows>;

// The definition's shape is services/workflows/definition.ts's (definitionOf): the store keeps the document.
const versionRows = rowCodec<Selectable<WorkflowVersionsTable>>()({ definition: json<unknown>() });
/** One saved definition of a workflow; runs keep the version they started with. */
type WorkflowVersion = EntityOf<typeof versionRows>;

export async function saveWorkflow(db: Db, workflow: Workflow, version: WorkflowVersion): Promise<void> {
  await db.insertInto('workflows').values(workflowRows.encode(workflow)).execute();
  await db.insertInto('workflow_versions').values(versionRows.encode(version)).execute();
}

export const saveWorkflowVersion = async (db: Db, version: WorkflowVersion): Promise<void> => {
  await db.insertInto('workflow_versions').values(versionRows.encode(version)).execute();
};

export const findWorkflow = async (db: Db, workspaceId: string, id: string): Promise<Workflow | undefined> => {
  const row = await db
    .selectFrom('workflows')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && workflowRows.decode(row);
};

export const findWorkflowVersion = async (db: Db, id: string): Promise<WorkflowVersion | undefined> => {
  const row = await db.selectFrom('workflow_versions').selectAll().where('id', '=', id).executeTakeFirst();
  return row && versionRows.decode(row);
};

export const updateWorkflow = async (
  db: Db,
  id: string,
  changes: Partial<Omit<Workflow, 'id' | 'workspace_id'>>,
): Promise<void> => {
  await db.updateTable('workflows').set(workflowRows.encode(changes)).where('id', '=', id).execute();
};

/** Removes a workflow with its versions, runs and their steps (foreign keys cascade). */
export const removeWorkflow = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number(
    (await db.deleteFrom('workflows').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst())
      .numDeletedRows,
  ) > 0;

/** Keyset page, newest first (ids are UUIDv7); one extra row says whether more exist. */
export async function listWorkflowsPage(
  db: Db,
  q: { workspaceId: string; status?: WorkflowStatus | undefined },
  page: ListPage,
): Promise<PageOf<Workflow>> {
  let query = db.selectFrom('workflows').selectAll().where('workspace_id', '=', q.workspaceId);
  if (q.status) query = query.where('status', '=', q.status);
  return workflowRows.decodePage(await readPage(query, 'id', page));
}

/** The enabled workflows an event of this name starts. */
export const listEnabledWorkflowsFor = async (db: Db, workspaceId: string, eventName: string): Promise<Workflow[]> =>
  workflowRows.decodeAll(
    await db
      .selectFrom('workflows')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('trigger_event', '=', eventName)
      .where('status', '=', 'enabled')
      .orderBy('id')
      .execute(),
  );

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
  const waits = await db
    .selectFrom('workflow_runs')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('wait_event', '=', eventName)
    .limit(1)
    .executeTakeFirst();
  return waits !== undefined;
}
