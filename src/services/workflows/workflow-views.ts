import { toIso, toIsoOrNull } from '../../shared/clock.js';
import type { WorkflowRun, WorkflowRunStep } from '../../store/workflow-runs.js';
import type { Workflow, WorkflowRunStatus, WorkflowStatus } from '../../store/workflows.js';
import type { Definition } from './definition.js';

/** What the API shows of a workflow (an "automation" in the Resend API), its runs and their steps. */

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

interface RunStepView {
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
