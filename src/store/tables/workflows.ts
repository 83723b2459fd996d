/** Workflows, their versions, runs and steps, the trigger outbox, and declared custom events. */

/** draft: saved, never enabled; enabled: events start runs; disabled: stopped (no new runs). */
export const WORKFLOW_STATUSES = ['draft', 'enabled', 'disabled'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

export interface WorkflowsTable {
  id: string;
  workspace_id: string;
  name: string;
  status: WorkflowStatus;
  /** The trigger step's event name, kept here so an event finds its workflows by index. */
  trigger_event: string;
  /** 1: a contact may be in several runs of the workflow at once. */
  allow_reentry: number;
  /** The current definition; runs keep the version they started with. */
  version_id: string;
  created_at: number;
  updated_at: number;
}

export interface WorkflowVersionsTable {
  id: string;
  workflow_id: string;
  /** JSON `{steps, connections}`, as validated when saved. */
  definition: string;
  created_at: number;
}

/** Resend's run statuses. */
export const WORKFLOW_RUN_STATUSES = ['running', 'completed', 'failed', 'cancelled'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];
/** ready: due to execute at next_at; waiting: held by a delay or wait until next_at (or an event); event_received: a wait's event came. */
export type WorkflowStepState = 'ready' | 'waiting' | 'event_received';

/** One execution of a workflow for one contact; also its place in the runner's queue. */
export interface WorkflowRunsTable {
  id: string;
  workspace_id: string;
  workflow_id: string;
  version_id: string;
  /** null when the trigger named no contact that exists any more. */
  subscriber_id: string | null;
  /** The contact's address when the run started. */
  email: string;
  /** Started by an event sent with a test key (or about test mail): its emails are simulated. */
  test: number;
  status: WorkflowRunStatus;
  trigger_event: string;
  /** JSON: the triggering event's payload (`event.*`). */
  trigger_payload: string;
  /** JSON: payloads of events received by wait steps, by name (`wait_events.*`). */
  wait_events: string;
  /** The step the run is at, and its row in workflow_run_steps; null once finished. */
  step_key: string | null;
  step_id: string | null;
  step_state: WorkflowStepState | null;
  step_started_at: number | null;
  /** The event a wait step waits for: events for the contact with this name resume the run. */
  wait_event: string | null;
  /** When the run is due (a step to execute, a delay or timeout over); null: waits for an event only, or finished. */
  next_at: number | null;
  /** Failed attempts of the current step (they are retried with backoff). */
  attempts: number;
  /** Steps entered so far: a bound on runaway loops. */
  steps_taken: number;
  /** `workflow:contact` while running without re-entry: unique, so a contact is in one run at a time. */
  exclusive_key: string | null;
  lease_owner: string | null;
  lease_until: number | null;
  error: string | null;
  /** When the triggering event happened. */
  entered_at: number;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

/** Resend's run step statuses. */
export const WORKFLOW_RUN_STEP_STATUSES = ['pending', 'running', 'completed', 'failed', 'skipped', 'waiting'] as const;
export type WorkflowRunStepStatus = (typeof WORKFLOW_RUN_STEP_STATUSES)[number];

/** One step a run went through (a step visited twice in a loop has two rows). */
export interface WorkflowRunStepsTable {
  id: string;
  run_id: string;
  step_key: string;
  type: string;
  status: WorkflowRunStepStatus;
  /** JSON: what the step did (the email id, the branch taken, why it was skipped). */
  output: string | null;
  /** JSON `{message, code}` of the last failure. */
  error: string | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
}

/**
 * The trigger outbox: an event that may start or resume runs, written in the transaction of
 * the state change it reports (or of POST /v1/events/send) and consumed by the runner.
 */
export interface WorkflowTriggersTable {
  id: string;
  workspace_id: string;
  event_name: string;
  /** The platform event (`evt_…`) this trigger reports; null for custom events. */
  event_id: string | null;
  subscriber_id: string | null;
  email: string | null;
  /** `<workspace>:<lower-cased address>`: a contact's triggers are acted on one at a time, in order. */
  contact_key: string;
  /** JSON object. */
  payload: string;
  test: number;
  created_at: number;
  lease_owner: string | null;
  lease_until: number | null;
}

/** A declared custom event: its name and the types of its payload's fields. */
export interface EventDefinitionsTable {
  id: string;
  workspace_id: string;
  name: string;
  /** JSON object field name -> string | number | boolean | date; null: any payload. */
  schema: string | null;
  created_at: number;
  updated_at: number | null;
}
