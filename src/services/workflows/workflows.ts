import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import {
  cancelWorkflowRuns,
  countWorkflowRunsByStatus,
  findWorkflowRun,
  listWorkflowRunSteps,
  listWorkflowRunsPage,
} from '../../store/workflow-runs.js';
import {
  findWorkflow,
  findWorkflowVersion,
  listWorkflowsPage,
  removeWorkflow,
  saveWorkflow,
  saveWorkflowVersion,
  updateWorkflow,
  WORKFLOW_RUN_STATUSES,
  WORKFLOW_STATUSES,
  type Workflow,
  type WorkflowRunStatus,
  type WorkflowStatus,
} from '../../store/workflows.js';
import type { Db } from '../../store/infra/db.js';
import type { ListPage } from '../../store/infra/list-page.js';
import type { ServiceDeps } from '../deps.js';
import { singleLine } from '../../messages/addresses.js';
import { checkReferences, type ReferenceDeps } from './check-references.js';
import { sendCustomEvent, type SendEventInput } from './custom-events.js';
import { definitionOf, parseDefinition, triggerOf } from './definition.js';
import {
  runStepView,
  runSummary,
  workflowSummary,
  type RunSummary,
  type RunView,
  type WorkflowListItem,
  type WorkflowView,
} from './workflow-views.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * Workflows as a use case: definitions (validated when saved, each save a new version that
 * runs keep, their references checked in check-references.ts), their runs, and custom events
 * sent through the API (custom-events.ts). Running them is the runner's job (src/workflows/);
 * starting runs from events is start-runs.ts.
 */

const MAX_NAME_LENGTH = 200;

interface WorkflowInput {
  name?: string | undefined;
  status?: string | undefined;
  steps?: unknown;
  connections?: unknown;
  allow_reentry?: boolean | undefined;
}

export interface WorkflowService {
  create(workspaceId: string, input: WorkflowInput): Promise<WorkflowView>;
  get(workspaceId: string, id: string): Promise<WorkflowView>;
  list(workspaceId: string, page: ListPage, status?: unknown): Promise<{ items: WorkflowListItem[]; more: boolean }>;
  update(workspaceId: string, id: string, input: WorkflowInput): Promise<WorkflowView>;
  /** A copy, as a draft, under "<name> (copy)". */
  duplicate(workspaceId: string, id: string): Promise<WorkflowView>;
  /** Disables the workflow and cancels every run in progress. */
  stop(workspaceId: string, id: string): Promise<{ workflow: WorkflowView; cancelled: number }>;
  /** Removes the workflow with its runs; runs in progress end where they are. */
  remove(workspaceId: string, id: string): Promise<void>;
  runs(
    workspaceId: string,
    id: string,
    page: ListPage,
    status?: unknown,
  ): Promise<{ items: RunSummary[]; more: boolean }>;
  run(workspaceId: string, id: string, runId: string): Promise<RunView>;
  /** Cancels one run: its remaining steps are skipped (a finished run cannot be cancelled; a cancelled one stays so). */
  cancelRun(workspaceId: string, id: string, runId: string): Promise<RunView>;
  /** A custom event for one contact: queued for the runner, which starts and resumes the runs it concerns. */
  sendEvent(workspaceId: string, input: SendEventInput): Promise<{ id: string; event: string }>;
}

type WorkflowServiceDeps = ServiceDeps & ReferenceDeps;

function statusOf(value: unknown): WorkflowStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !isOneOf(WORKFLOW_STATUSES, value))
    throw validationError('status', `must be one of ${WORKFLOW_STATUSES.join(', ')}`);
  return value;
}

/** `running` or `running,failed` (the Resend SDK joins a list with commas). */
function runStatusesOf(value: unknown): WorkflowRunStatus[] | undefined {
  if (value === undefined || value === '') return undefined;
  const list = (Array.isArray(value) ? value.join(',') : String(value)).split(',').map((s) => s.trim());
  for (const s of list)
    if (!isOneOf(WORKFLOW_RUN_STATUSES, s))
      throw validationError(
        'status',
        `must be one or more of ${WORKFLOW_RUN_STATUSES.join(', ')}, separated by commas`,
      );
  return list as WorkflowRunStatus[];
}

const checkName = (name: unknown): string => {
  if (typeof name !== 'string' || name.trim() === '' || name.trim().length > MAX_NAME_LENGTH)
    throw validationError('name', `must be 1 to ${MAX_NAME_LENGTH} characters`);
  singleLine('name', name);
  return name.trim();
};

async function findOwn(db: Db, workspaceId: string, id: string): Promise<Workflow> {
  const found = isUuid(id) ? await findWorkflow(db, workspaceId, id.toLowerCase()) : undefined;
  if (!found) throw notFound(`Automation ${id}`);
  return found;
}

async function workflowView(db: Db, w: Workflow): Promise<WorkflowView> {
  const parsed = definitionOf((await findWorkflowVersion(db, w.version_id))!);
  return {
    ...workflowSummary(w),
    runs: (await countWorkflowRunsByStatus(db, [w.id])).get(w.id)!,
    steps: parsed.steps,
    connections: parsed.connections,
  };
}

async function runView(db: Db, workspaceId: string, id: string, runId: string): Promise<RunView> {
  const workflow = await findOwn(db, workspaceId, id);
  const run = isUuid(runId) ? await findWorkflowRun(db, workflow.id, runId.toLowerCase()) : undefined;
  if (!run) throw notFound(`Run ${runId} of automation ${id}`);
  return { ...runSummary(run), steps: (await listWorkflowRunSteps(db, run.id)).map(runStepView) };
}

/** A definition checked (its shape, then what it names) as the workflow's next version. */
async function newVersion(
  deps: WorkflowServiceDeps,
  workspaceId: string,
  workflowId: string,
  input: WorkflowInput,
  now: number,
) {
  const definition = parseDefinition({ steps: input.steps, connections: input.connections });
  await checkReferences(deps, workspaceId, definition);
  return { definition, version: { id: newId(), workflow_id: workflowId, definition, created_at: now } };
}

/** The fields an update changes, checked; a new definition is saved as a version of its own. */
function checkUpdate(existing: Workflow, input: WorkflowInput, now: number): Partial<Workflow> {
  const status = statusOf(input.status);
  if (status === 'draft' && existing.status !== 'draft')
    throw validationError('status', 'a workflow that left draft cannot go back to it; disable it instead');
  if ((input.steps === undefined) !== (input.connections === undefined)) {
    throw validationError(
      input.steps === undefined ? 'steps' : 'connections',
      'steps and connections are replaced together: give both',
    );
  }
  const changes: Partial<Workflow> = { updated_at: now };
  if (input.name !== undefined) changes.name = checkName(input.name);
  if (status !== undefined) changes.status = status;
  if (input.allow_reentry !== undefined) changes.allow_reentry = input.allow_reentry;
  return changes;
}

export function createWorkflowService(deps: WorkflowServiceDeps): WorkflowService {
  const { db, clock } = deps;
  const find = (workspaceId: string, id: string) => findOwn(db, workspaceId, id);
  const view = (w: Workflow) => workflowView(db, w);
  const getRun = (workspaceId: string, id: string, runId: string) => runView(db, workspaceId, id, runId);

  return {
    async create(workspaceId, input) {
      const name = checkName(input.name);
      const status = statusOf(input.status) ?? 'draft';
      if (input.steps === undefined) throw validationError('steps', 'is required');
      const now = clock.now();
      const id = newId();
      const { definition, version } = await newVersion(deps, workspaceId, id, input, now);
      const row: Workflow = {
        id,
        workspace_id: workspaceId,
        name,
        status,
        trigger_event: triggerOf(definition).config.event_name,
        allow_reentry: input.allow_reentry === true,
        version_id: version.id,
        created_at: now,
        updated_at: now,
      };
      await db.transaction().execute((trx) => saveWorkflow(trx, row, version));
      return view(row);
    },

    get: async (workspaceId, id) => view(await find(workspaceId, id)),

    async list(workspaceId, page, status) {
      const { rows, more } = await listWorkflowsPage(db, { workspaceId, status: statusOf(status) }, page);
      const counts = await countWorkflowRunsByStatus(
        db,
        rows.map((w) => w.id),
      );
      return { items: rows.map((w) => ({ ...workflowSummary(w), runs: counts.get(w.id)! })), more };
    },

    async update(workspaceId, id, input) {
      const existing = await find(workspaceId, id);
      const now = clock.now();
      const changes = checkUpdate(existing, input, now);
      const saved = input.steps !== undefined ? await newVersion(deps, workspaceId, existing.id, input, now) : null;
      if (saved) {
        changes.version_id = saved.version.id;
        changes.trigger_event = triggerOf(saved.definition).config.event_name;
      }
      await db.transaction().execute(async (trx) => {
        if (saved) await saveWorkflowVersion(trx, saved.version);
        await updateWorkflow(trx, existing.id, changes);
      });
      return view({ ...existing, ...changes });
    },

    async duplicate(workspaceId, id) {
      const source = await find(workspaceId, id);
      const now = clock.now();
      const copyId = newId();
      const version = {
        id: newId(),
        workflow_id: copyId,
        definition: (await findWorkflowVersion(db, source.version_id))!.definition,
        created_at: now,
      };
      const name = `${source.name} (copy)`.slice(0, MAX_NAME_LENGTH);
      const row: Workflow = {
        ...source,
        id: copyId,
        name,
        status: 'draft',
        version_id: version.id,
        created_at: now,
        updated_at: now,
      };
      await db.transaction().execute((trx) => saveWorkflow(trx, row, version));
      return view(row);
    },

    async stop(workspaceId, id) {
      const workflow = await find(workspaceId, id);
      const now = clock.now();
      const cancelled = await db.transaction().execute(async (trx) => {
        await updateWorkflow(trx, workflow.id, { status: 'disabled', updated_at: now });
        return (await cancelWorkflowRuns(trx, { workflowId: workflow.id }, now)).length;
      });
      return { workflow: await view({ ...workflow, status: 'disabled', updated_at: now }), cancelled };
    },

    async remove(workspaceId, id) {
      const workflow = await find(workspaceId, id);
      await removeWorkflow(db, workspaceId, workflow.id);
    },

    async runs(workspaceId, id, page, status) {
      const workflow = await find(workspaceId, id);
      const { rows, more } = await listWorkflowRunsPage(
        db,
        { workflowId: workflow.id, statuses: runStatusesOf(status) },
        page,
      );
      return { items: rows.map(runSummary), more };
    },

    run: getRun,

    async cancelRun(workspaceId, id, runId) {
      const current = await getRun(workspaceId, id, runId);
      if (current.status === 'completed' || current.status === 'failed')
        throw new AppError(
          'invalid_state',
          `Run ${runId} has already ${current.status === 'completed' ? 'completed' : 'failed'}; only a running run can be cancelled`,
        );
      if (current.status === 'running')
        await db
          .transaction()
          .execute((trx) =>
            cancelWorkflowRuns(trx, { workflowId: current.automation_id, runId: current.id }, clock.now()),
          );
      return getRun(workspaceId, id, runId);
    },

    sendEvent: (workspaceId, input) => sendCustomEvent(db, clock, workspaceId, input),
  };
}
