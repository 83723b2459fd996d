import { recordEvent } from '../events/record-event.js';
import type { EventType } from '../events/event-types.js';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import type { Db } from '../store/infra/db.js';
import type { RunChanges, WorkflowRun, WorkflowRunStep } from '../store/workflow-runs.js';
import { saveWorkflowRunStep } from '../store/workflow-runs.js';
import { findWorkflow } from '../store/workflows.js';
import { findStep, nextStepKey, type ConnectionType, type Definition } from '../services/workflows/definition.js';
import { parseDuration } from '../shared/duration.js';

/**
 * How a run moves: entering its next step (a delay or a wait starts waiting at once, so an
 * event that comes right after is not missed), or finishing. These write in the caller's
 * transaction and return the run's changes, which the caller applies (under its lease) in the
 * same transaction: a step's outcome and the run's next state commit together.
 */

/** A bound on steps entered by one run: a loop through a short delay cannot run for ever. */
const MAX_STEPS_PER_RUN = 1000;

interface Moved {
  changes: RunChanges;
  /** The run ended (completed, or failed by the step bound). */
  finished: boolean;
  /** The run is due again at once (its next step executes without waiting). */
  due: boolean;
}

const finish = (now: number, status: 'completed' | 'failed', error: string | null): RunChanges => ({
  status,
  error,
  step_key: null,
  step_id: null,
  step_state: null,
  step_started_at: null,
  wait_event: null,
  next_at: null,
  exclusive_key: null,
  lease_owner: null,
  lease_until: null,
  completed_at: now,
  updated_at: now,
});

/** The data of workflow.* events: the run as it is after `changes`. */
async function recordRunEvent(trx: Db, type: EventType, run: WorkflowRun, now: number): Promise<void> {
  const workflow = await findWorkflow(trx, run.workspace_id, run.workflow_id);
  await recordEvent(trx, {
    workspaceId: run.workspace_id,
    type,
    at: now,
    data: {
      workflow_id: run.workflow_id,
      workflow_name: workflow?.name ?? null,
      run_id: run.id,
      subscriber_id: run.subscriber_id,
      email: run.email,
      trigger_event: run.trigger_event,
      status: run.status,
      started_at: toIso(run.created_at),
      completed_at: toIsoOrNull(run.completed_at),
      error: run.error,
      test: run.test,
      timestamp: toIso(now),
    },
  });
}

export const recordRunStarted = (trx: Db, run: WorkflowRun, now: number) =>
  recordRunEvent(trx, 'workflow.started', run, now);

/** Ends a run for good because a step failed: the failure event goes with it. */
export async function failRun(trx: Db, run: WorkflowRun, error: string, now: number): Promise<RunChanges> {
  const changes = finish(now, 'failed', error);
  await recordRunEvent(trx, 'workflow.failed', { ...run, ...changes }, now);
  return changes;
}

/**
 * Moves a run from step `from` along its `connection`: enters the step it leads to, or,
 * when none does, completes the run (with workflow.completed).
 */
export async function moveRun(
  trx: Db,
  run: WorkflowRun,
  definition: Definition,
  from: string,
  connection: ConnectionType,
  now: number,
): Promise<Moved> {
  const key = nextStepKey(definition, from, connection);
  if (key === undefined) {
    const changes = finish(now, 'completed', null);
    await recordRunEvent(trx, 'workflow.completed', { ...run, ...changes }, now);
    return { changes, finished: true, due: false };
  }
  if (run.steps_taken + 1 > MAX_STEPS_PER_RUN) {
    return {
      changes: await failRun(trx, run, `the run entered ${MAX_STEPS_PER_RUN} steps without finishing (a loop?)`, now),
      finished: true,
      due: false,
    };
  }
  const step = findStep(definition, key)!;
  const waits = step.type === 'delay' || step.type === 'wait_for_event';
  const row: WorkflowRunStep = {
    id: newId(),
    run_id: run.id,
    step_key: step.key,
    type: step.type,
    status: waits ? 'waiting' : 'pending',
    output: null,
    error: null,
    attempts: 0,
    created_at: now,
    started_at: waits ? now : null,
    completed_at: null,
  };
  await saveWorkflowRunStep(trx, row);
  const base: RunChanges = {
    step_key: step.key,
    step_id: row.id,
    step_started_at: now,
    attempts: 0,
    steps_taken: run.steps_taken + 1,
    updated_at: now,
  };
  if (step.type === 'delay') {
    return {
      changes: {
        ...base,
        step_state: 'waiting',
        wait_event: null,
        next_at: now + parseDuration('duration', step.config.duration),
      },
      finished: false,
      due: false,
    };
  }
  if (step.type === 'wait_for_event') {
    const timeout = step.config.timeout === undefined ? null : now + parseDuration('timeout', step.config.timeout);
    return {
      changes: { ...base, step_state: 'waiting', wait_event: step.config.event_name, next_at: timeout },
      finished: false,
      due: false,
    };
  }
  return { changes: { ...base, step_state: 'ready', wait_event: null, next_at: now }, finished: false, due: true };
}
