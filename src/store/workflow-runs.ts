import type { Selectable } from 'kysely';
import type { Db, Dialect } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { claimRows, unleased, type Lease } from './lease.js';
import { flag, json, jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { WorkflowRunStatus, WorkflowRunsTable, WorkflowRunStepsTable } from './tables/workflows.js';

const runRows = rowCodec<Selectable<WorkflowRunsTable>>()({
  test: flag,
  trigger_payload: json<Record<string, unknown>>(),
  wait_events: json<Record<string, unknown>>(),
});
/** One execution of a workflow for one contact: the triggering event's payload and those its waits received. */
export type WorkflowRun = EntityOf<typeof runRows>;

const stepRows = rowCodec<Selectable<WorkflowRunStepsTable>>()({
  output: jsonOrNull<Record<string, unknown>>(),
  error: jsonOrNull<{ message: string; code: string }>(),
});
/** One step a run went through: what it did, and its last failure. */
export type WorkflowRunStep = EntityOf<typeof stepRows>;

/**
 * Workflow runs and their steps. A running run is also a queue row: due at next_at, claimed
 * with a lease (lease_owner, lease_until) like queue_items, so a run survives restarts and
 * kill -9 and nodes sharing a database take disjoint runs.
 */

export type RunChanges = Partial<Omit<WorkflowRun, 'id' | 'workspace_id' | 'workflow_id'>>;

export const saveWorkflowRun = async (db: Db, run: WorkflowRun): Promise<boolean> => {
  // A contact already in a run of a workflow without re-entry holds the exclusive key.
  const r = await db
    .insertInto('workflow_runs')
    .values(runRows.encode(run))
    .onConflict((oc) => oc.column('exclusive_key').doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
};

export const saveWorkflowRunStep = async (db: Db, step: WorkflowRunStep): Promise<void> => {
  await db.insertInto('workflow_run_steps').values(stepRows.encode(step)).execute();
};

export const updateWorkflowRunStep = async (
  db: Db,
  id: string,
  changes: Partial<Omit<WorkflowRunStep, 'id' | 'run_id'>>,
): Promise<void> => {
  await db.updateTable('workflow_run_steps').set(stepRows.encode(changes)).where('id', '=', id).execute();
};

/** Leases up to `limit` due runs: running, next_at reached, not leased (store/lease.ts). */
export const claimDueWorkflowRuns = async (
  db: Db,
  dialect: Dialect,
  lease: Lease,
  limit: number,
): Promise<WorkflowRun[]> =>
  runRows.decodeAll(
    await claimRows(
      db,
      dialect,
      'workflow_runs',
      lease,
      db
        .selectFrom('workflow_runs')
        .select('id')
        .where('status', '=', 'running')
        .where('next_at', '<=', lease.now)
        .where(unleased(lease.now))
        .orderBy('next_at')
        .limit(limit),
    ),
  );

/** Writes a run no node holds yet (one just started, in the transaction that saved it). */
export const updateWorkflowRun = async (db: Db, id: string, changes: RunChanges): Promise<void> => {
  await db.updateTable('workflow_runs').set(runRows.encode(changes)).where('id', '=', id).execute();
};

/** Writes a run this owner holds and that is still running; false when the lease was lost or the run was cancelled or removed. */
export async function updateLeasedWorkflowRun(
  db: Db,
  id: string,
  owner: string,
  changes: RunChanges,
): Promise<boolean> {
  const r = await db
    .updateTable('workflow_runs')
    .set(runRows.encode(changes))
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export const findWorkflowRun = async (db: Db, workflowId: string, id: string): Promise<WorkflowRun | undefined> => {
  const row = await db
    .selectFrom('workflow_runs')
    .selectAll()
    .where('workflow_id', '=', workflowId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && runRows.decode(row);
};

export const listWorkflowRunSteps = async (db: Db, runId: string): Promise<WorkflowRunStep[]> =>
  stepRows.decodeAll(
    await db.selectFrom('workflow_run_steps').selectAll().where('run_id', '=', runId).orderBy('id').execute(),
  );

/** Keyset page of a workflow's runs, newest first. */
export async function listWorkflowRunsPage(
  db: Db,
  q: { workflowId: string; statuses?: WorkflowRunStatus[] | undefined },
  page: ListPage,
): Promise<PageOf<WorkflowRun>> {
  let query = db.selectFrom('workflow_runs').selectAll().where('workflow_id', '=', q.workflowId);
  if (q.statuses && q.statuses.length > 0) query = query.where('status', 'in', q.statuses);
  return runRows.decodePage(await readPage(query, 'id', page));
}

type RunCounts = Record<WorkflowRunStatus, number>;

/** Runs by status, for each of some workflows, in one query. */
export async function countWorkflowRunsByStatus(db: Db, workflowIds: string[]): Promise<Map<string, RunCounts>> {
  const out = new Map<string, RunCounts>(
    workflowIds.map((id) => [id, { running: 0, completed: 0, failed: 0, cancelled: 0 }]),
  );
  if (workflowIds.length === 0) return out;
  const rows = await db
    .selectFrom('workflow_runs')
    .select(['workflow_id', 'status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('workflow_id', 'in', workflowIds)
    .groupBy(['workflow_id', 'status'])
    .execute();
  for (const r of rows) out.get(r.workflow_id)![r.status] = Number(r.n);
  return out;
}

/**
 * Whether the contact was in a run of the workflow at `at` (the run had been entered and had
 * not finished): an event at that time does not start another unless re-entry is allowed.
 */
export async function wasInWorkflowRun(db: Db, workflowId: string, subscriberId: string, at: number): Promise<boolean> {
  const row = await db
    .selectFrom('workflow_runs')
    .select('id')
    .where('workflow_id', '=', workflowId)
    .where('subscriber_id', '=', subscriberId)
    .where('entered_at', '<=', at)
    .where((eb) => eb.or([eb('completed_at', 'is', null), eb('completed_at', '>=', at)]))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Runs of a contact waiting for an event of this name and entered no later than `at` (the
 * event's time). A contact's events are consumed in order, so an event that came while the
 * run was still being moved to its wait (the runner's lag) counts, one from before the run
 * does not, and one consumed while the run sat at an earlier step (a delay) was spent then.
 */
export const listRunsWaitingFor = async (
  db: Db,
  workspaceId: string,
  subscriberId: string,
  eventName: string,
  at: number,
): Promise<WorkflowRun[]> =>
  runRows.decodeAll(
    await db
      .selectFrom('workflow_runs')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('wait_event', '=', eventName)
      .where('subscriber_id', '=', subscriberId)
      .where('status', '=', 'running')
      .where('step_state', '=', 'waiting')
      .where('entered_at', '<=', at)
      .orderBy('id')
      .execute(),
  );

/**
 * Wakes a waiting run with the event it waited for, unless something else holds it (its
 * timeout is being handled: the timeout wins). False when it was not waiting any more.
 */
export async function resumeWaitingWorkflowRun(
  db: Db,
  run: WorkflowRun,
  eventName: string,
  waitEvents: Record<string, unknown>,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('workflow_runs')
    .set(
      runRows.encode({
        step_state: 'event_received',
        wait_event: null,
        wait_events: waitEvents,
        next_at: now,
        updated_at: now,
      }),
    )
    .where('id', '=', run.id)
    .where('status', '=', 'running')
    .where('step_state', '=', 'waiting')
    .where('wait_event', '=', eventName)
    .where(unleased(now))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Cancels running runs (one, or all of a workflow): their current step is marked skipped.
 * A step executing on a node at that moment finishes, but its run goes no further.
 */
export async function cancelWorkflowRuns(
  db: Db,
  filter: { workflowId: string; runId?: string },
  now: number,
): Promise<WorkflowRun[]> {
  let q = db
    .updateTable('workflow_runs')
    .set({
      status: 'cancelled',
      completed_at: now,
      updated_at: now,
      next_at: null,
      wait_event: null,
      exclusive_key: null,
      lease_owner: null,
      lease_until: null,
    })
    .where('workflow_id', '=', filter.workflowId)
    .where('status', '=', 'running');
  if (filter.runId) q = q.where('id', '=', filter.runId);
  const runs = runRows.decodeAll(await q.returningAll().execute());
  const stepIds = runs.map((r) => r.step_id).filter((id): id is string => id !== null);
  for (let i = 0; i < stepIds.length; i += 500) {
    await db
      .updateTable('workflow_run_steps')
      .set(stepRows.encode({ status: 'skipped', output: { reason: 'run_cancelled' }, completed_at: now }))
      .where('id', 'in', stepIds.slice(i, i + 500))
      .where('status', 'in', ['pending', 'running', 'waiting'])
      .execute();
  }
  return runs;
}
