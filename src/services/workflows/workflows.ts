import { EVENT_TYPES, isWorkflowTriggerEvent } from '../../events/event-types.js';
import { findEventDefinitionByName } from '../../store/event-definitions.js';
import { checkTypedValues } from '../../shared/typed-fields.js';
import { domainOf } from '../../shared/domain-name.js';
import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { AppError, isAppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { findSubscriber } from '../../store/subscribers.js';
import { saveWorkflowTrigger, triggerContactKey } from '../../store/workflow-triggers.js';
import { cancelWorkflowRuns, countWorkflowRunsByStatus, findWorkflowRun, listWorkflowRunSteps, listWorkflowRunsPage, type WorkflowRun, type WorkflowRunStep } from '../../store/workflow-runs.js';
import { findWorkflow, findWorkflowVersion, listWorkflowsPage, removeWorkflow, saveWorkflow, saveWorkflowVersion, updateWorkflow, WORKFLOW_RUN_STATUSES, WORKFLOW_STATUSES, type Workflow, type WorkflowRunStatus, type WorkflowStatus } from '../../store/workflows.js';
import { findWorkspace } from '../../store/workspaces.js';
import type { AudienceService } from '../marketing/audiences.js';
import type { ListPage } from '../../store/list-page.js';
import type { ServiceDeps } from '../deps.js';
import { parseMailbox, parseMailboxes, requireAddress, singleLine } from '../../messages/addresses.js';
import type { SendService } from '../send/send-email.js';
import type { TemplateService } from '../templates.js';
import { definitionOf, eventNameSchema, parseDefinition, triggerOf, type Definition } from './definition.js';

/**
 * Workflows as a use case: definitions (validated when saved, each save a new version that
 * runs keep), their runs, and custom events sent through the API. Running them is the
 * runner's job (src/workflows/); starting runs from events is start-runs.ts.
 */

export const MAX_NAME_LENGTH = 200;
/** Largest event payload, as JSON. */
export const MAX_EVENT_PAYLOAD_BYTES = 32 * 1024;

export interface WorkflowInput {
  name?: string | undefined;
  status?: string | undefined;
  steps?: unknown;
  connections?: unknown;
  allow_reentry?: boolean | undefined;
}

export interface WorkflowSummary {
  object: 'automation';
  id: string;
  name: string;
  status: WorkflowStatus;
  trigger_event: string;
  allow_reentry: boolean;
  created_at: string;
  updated_at: string;
}

export interface WorkflowListItem extends WorkflowSummary {
  /** How many runs are in each status. */
  runs: Record<WorkflowRunStatus, number>;
}

export interface WorkflowView extends WorkflowListItem {
  steps: Definition['steps'];
  connections: Definition['connections'];
}

export interface RunStepView {
  id: string;
  key: string;
  type: string;
  status: string;
  output: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  attempts: number;
  started_at: string | null;
  completed_at: string | null;
  created_at: string;
}

export interface RunSummary {
  object: 'automation_run';
  id: string;
  automation_id: string;
  status: WorkflowRunStatus;
  contact_id: string | null;
  email: string;
  trigger_event: string;
  current_step: string | null;
  /** When a waiting run continues (its delay or timeout), if it waits for a time. */
  next_at: string | null;
  error: string | null;
  test: boolean;
  started_at: string;
  completed_at: string | null;
  created_at: string;
}

export interface RunView extends RunSummary {
  steps: RunStepView[];
}


export interface SendEventInput {
  event: string;
  contactId?: string | undefined;
  email?: string | undefined;
  payload?: unknown;
  test: boolean;
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
  runs(workspaceId: string, id: string, page: ListPage, status?: unknown): Promise<{ items: RunSummary[]; more: boolean }>;
  run(workspaceId: string, id: string, runId: string): Promise<RunView>;
  /** Cancels one run: its remaining steps are skipped (a finished run cannot be cancelled; a cancelled one stays so). */
  cancelRun(workspaceId: string, id: string, runId: string): Promise<RunView>;
  /** A custom event for one contact: queued for the runner, which starts and resumes the runs it concerns. */
  sendEvent(workspaceId: string, input: SendEventInput): Promise<{ id: string; event: string }>;
}

export interface WorkflowServiceDeps extends ServiceDeps {
  templates: TemplateService;
  audiences: AudienceService;
  send: SendService;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const workflowSummary = (w: Workflow): WorkflowSummary => ({
  object: 'automation',
  id: w.id,
  name: w.name,
  status: w.status,
  trigger_event: w.trigger_event,
  allow_reentry: w.allow_reentry,
  created_at: toIso(w.created_at),
  updated_at: toIso(w.updated_at),
});

export const runSummary = (r: WorkflowRun): RunSummary => ({
  object: 'automation_run',
  id: r.id,
  automation_id: r.workflow_id,
  status: r.status,
  contact_id: r.subscriber_id,
  email: r.email,
  trigger_event: r.trigger_event,
  current_step: r.step_key,
  next_at: toIsoOrNull(r.status === 'running' && r.step_state === 'waiting' ? r.next_at : null),
  error: r.error,
  test: r.test,
  started_at: toIso(r.created_at),
  completed_at: toIsoOrNull(r.completed_at),
  created_at: toIso(r.created_at),
});

export const runStepView = (s: WorkflowRunStep): RunStepView => ({
  id: s.id,
  key: s.step_key,
  type: s.type,
  status: s.status,
  output: s.output,
  error: s.error,
  attempts: s.attempts,
  started_at: toIsoOrNull(s.started_at),
  completed_at: toIsoOrNull(s.completed_at),
  created_at: toIso(s.created_at),
});

function statusOf(value: unknown): WorkflowStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !(WORKFLOW_STATUSES as readonly string[]).includes(value)) throw validationError('status', `must be one of ${WORKFLOW_STATUSES.join(', ')}`);
  return value as WorkflowStatus;
}

/** `running` or `running,failed` (the Resend SDK joins a list with commas). */
function runStatusesOf(value: unknown): WorkflowRunStatus[] | undefined {
  if (value === undefined || value === '') return undefined;
  const list = (Array.isArray(value) ? value.join(',') : String(value)).split(',').map((s) => s.trim());
  for (const s of list) if (!(WORKFLOW_RUN_STATUSES as readonly string[]).includes(s)) throw validationError('status', `must be one or more of ${WORKFLOW_RUN_STATUSES.join(', ')}, separated by commas`);
  return list as WorkflowRunStatus[];
}

/** A platform event may start a workflow only if it concerns a subscriber; any other name is a custom event. */
function checkEventName(field: string, name: string): void {
  if ((EVENT_TYPES as readonly string[]).includes(name) && !isWorkflowTriggerEvent(name)) {
    throw validationError(field, `${name} is not about one subscriber, so it cannot start or resume a run; platform events that can: subscriber.created, subscriber.updated, subscriber.unsubscribed, email.opened, email.clicked, email.bounced`);
  }
}

export function createWorkflowService(deps: WorkflowServiceDeps): WorkflowService {
  const { db, clock, templates, audiences, send } = deps;

  async function find(workspaceId: string, id: string): Promise<Workflow> {
    const found = isUuid(id) ? await findWorkflow(db, workspaceId, id.toLowerCase()) : undefined;
    if (!found) throw notFound(`Automation ${id}`);
    return found;
  }

  async function view(w: Workflow): Promise<WorkflowView> {
    const parsed = definitionOf((await findWorkflowVersion(db, w.version_id))!);
    return { ...workflowSummary(w), runs: (await countWorkflowRunsByStatus(db, [w.id])).get(w.id)!, steps: parsed.steps, connections: parsed.connections };
  }

  /** Everything a definition names must exist now: templates, segments, sending domains. */
  async function checkReferences(workspaceId: string, definition: Definition): Promise<void> {
    const workspace = await findWorkspace(db, workspaceId);
    if (!workspace) throw notFound(`Workspace ${workspaceId}`);
    for (const [i, step] of definition.steps.entries()) {
      const at = `steps[${i}].config`;
      if (step.type === 'trigger' || step.type === 'wait_for_event') checkEventName(`${at}.event_name`, step.config.event_name);
      if (step.type === 'send_email') {
        const c = step.config;
        await templates.get(workspaceId, c.template.id).catch((err: unknown) => {
          throw isAppError(err) && err.code === 'not_found' ? validationError(`${at}.template.id`, `template ${c.template.id} not found`) : err;
        });
        if (c.subject !== undefined) {
          singleLine(`${at}.subject`, c.subject);
          if (c.subject.trim() === '' || c.subject.length > 998) throw validationError(`${at}.subject`, 'must be 1 to 998 characters');
        }
        if (c.from !== undefined) {
          const from = parseMailbox(`${at}.from`, c.from);
          // A domain added to the workspace; it must be verified by the time a live run sends.
          await send.checkSender(workspace, from.address, true).catch((err: unknown) => {
            throw isAppError(err) && err.code === 'forbidden' ? validationError(`${at}.from`, `${domainOf(from.address)} is not a domain of this workspace`) : err;
          });
        }
        if (c.reply_to !== undefined) parseMailboxes(`${at}.reply_to`, c.reply_to);
      }
      if (step.type === 'add_to_segment') {
        await audiences.get(workspaceId, step.config.segment_id).catch((err: unknown) => {
          throw isAppError(err) && err.code === 'not_found' ? validationError(`${at}.segment_id`, `segment ${step.config.segment_id} not found`) : err;
        });
      }
    }
  }

  async function getRun(workspaceId: string, id: string, runId: string): Promise<RunView> {
    const workflow = await find(workspaceId, id);
    const run = isUuid(runId) ? await findWorkflowRun(db, workflow.id, runId.toLowerCase()) : undefined;
    if (!run) throw notFound(`Run ${runId} of automation ${id}`);
    return { ...runSummary(run), steps: (await listWorkflowRunSteps(db, run.id)).map(runStepView) };
  }

  const checkName = (name: unknown): string => {
    if (typeof name !== 'string' || name.trim() === '' || name.trim().length > MAX_NAME_LENGTH) throw validationError('name', `must be 1 to ${MAX_NAME_LENGTH} characters`);
    singleLine('name', name);
    return name.trim();
  };

  async function saveVersion(workspaceId: string, workflowId: string, input: WorkflowInput, now: number) {
    const definition = parseDefinition({ steps: input.steps, connections: input.connections });
    await checkReferences(workspaceId, definition);
    return { definition, version: { id: newId(), workflow_id: workflowId, definition, created_at: now } };
  }

  return {
    async create(workspaceId, input) {
      const name = checkName(input.name);
      const status = statusOf(input.status) ?? 'draft';
      if (input.steps === undefined) throw validationError('steps', 'is required');
      const now = clock.now();
      const id = newId();
      const { definition, version } = await saveVersion(workspaceId, id, input, now);
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
      const counts = await countWorkflowRunsByStatus(db, rows.map((w) => w.id));
      return { items: rows.map((w) => ({ ...workflowSummary(w), runs: counts.get(w.id)! })), more };
    },

    async update(workspaceId, id, input) {
      const existing = await find(workspaceId, id);
      const status = statusOf(input.status);
      if (status === 'draft' && existing.status !== 'draft') throw validationError('status', 'a workflow that left draft cannot go back to it; disable it instead');
      if ((input.steps === undefined) !== (input.connections === undefined)) {
        throw validationError(input.steps === undefined ? 'steps' : 'connections', 'steps and connections are replaced together: give both');
      }
      const now = clock.now();
      const changes: Partial<Workflow> = { updated_at: now };
      if (input.name !== undefined) changes.name = checkName(input.name);
      if (status !== undefined) changes.status = status;
      if (input.allow_reentry !== undefined) changes.allow_reentry = input.allow_reentry;
      const saved = input.steps !== undefined ? await saveVersion(workspaceId, existing.id, input, now) : null;
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
      const version = { id: newId(), workflow_id: copyId, definition: (await findWorkflowVersion(db, source.version_id))!.definition, created_at: now };
      const name = `${source.name} (copy)`.slice(0, MAX_NAME_LENGTH);
      const row: Workflow = { ...source, id: copyId, name, status: 'draft', version_id: version.id, created_at: now, updated_at: now };
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
      const { rows, more } = await listWorkflowRunsPage(db, { workflowId: workflow.id, statuses: runStatusesOf(status) }, page);
      return { items: rows.map(runSummary), more };
    },

    run: getRun,

    async cancelRun(workspaceId, id, runId) {
      const current = await getRun(workspaceId, id, runId);
      if (current.status === 'completed' || current.status === 'failed') throw new AppError('invalid_state', `Run ${runId} has already ${current.status === 'completed' ? 'completed' : 'failed'}; only a running run can be cancelled`);
      if (current.status === 'running') await db.transaction().execute((trx) => cancelWorkflowRuns(trx, { workflowId: current.automation_id, runId: current.id }, clock.now()));
      return getRun(workspaceId, id, runId);
    },

    async sendEvent(workspaceId, input) {
      const event = eventNameSchema.safeParse(input.event);
      if (!event.success) throw validationError('event', event.error.issues[0]!.message);
      if ((EVENT_TYPES as readonly string[]).includes(input.event)) throw validationError('event', `${input.event} is a platform event: mailsvc emits it itself`);
      if ((input.contactId === undefined) === (input.email === undefined)) throw validationError('contact_id', 'give either contact_id or email (not both)');
      let subscriberId: string | null = null;
      let email: string | null = null;
      if (input.contactId !== undefined) {
        const found = isUuid(input.contactId) ? await findSubscriber(db, workspaceId, input.contactId.toLowerCase()) : undefined;
        if (!found) throw notFound(`Contact ${input.contactId}`);
        subscriberId = found.id;
        email = found.email;
      } else {
        email = requireAddress('email', input.email!);
      }
      const payload = input.payload ?? {};
      if (!isPlainObject(payload)) throw validationError('payload', 'must be an object');
      const text = JSON.stringify(payload);
      if (Buffer.byteLength(text) > MAX_EVENT_PAYLOAD_BYTES) throw validationError('payload', `must be at most ${MAX_EVENT_PAYLOAD_BYTES} bytes as JSON`);
      // A declared event's payload follows its schema (events.create), so workflows can rely on it.
      const declared = await findEventDefinitionByName(db, workspaceId, input.event);
      if (declared?.schema) checkTypedValues('payload', declared.schema, payload);
      const id = newId();
      await saveWorkflowTrigger(db, {
        id,
        workspace_id: workspaceId,
        event_name: input.event,
        event_id: null,
        subscriber_id: subscriberId,
        email,
        contact_key: triggerContactKey(workspaceId, email),
        payload,
        test: input.test === true,
        created_at: clock.now(),
        lease_owner: null,
        lease_until: null,
      });
      return { id, event: input.event };
    },
  };
}
