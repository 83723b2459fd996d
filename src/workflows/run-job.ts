import type { Config } from '../config/schema.js';
import type { Clock } from '../shared/clock.js';
import { isAppError } from '../shared/errors.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import type { Db, Dialect } from '../store/infra/db.js';
import {
  claimDueWorkflowRuns,
  updateLeasedWorkflowRun,
  updateWorkflowRunStep,
  type RunChanges,
  type WorkflowRun,
} from '../store/workflow-runs.js';
import { findWorkspace, type Workspace } from '../store/workspaces.js';
import { findStep, type Definition } from '../services/workflows/definition.js';
import type { SubscriberView } from '../services/marketing/subscribers.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';
import { failRun, moveRun } from './advance-run.js';
import type { DefinitionCache } from './definition-cache.js';
import { executeStep, type Done, type StepError, type StepServices } from './execute-step.js';
import { runContext } from './run-context.js';
import { LeaseLost } from './start-runs.js';

interface RunJobDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  settings: Config['workflows'];
  services: StepServices;
  batcher: CommitBatcher;
  definitions: DefinitionCache;
}

/**
 * Due workflow runs, a job on the worker kernel: a running run is also a queue row, due at
 * `next_at`. Each claimed run executes its steps one after another until it waits (a delay, a
 * wait for an event), finishes, or must retry; every step's outcome and the run's next state
 * commit in one transaction, under the lease. What is its own: `settings.concurrency` runs at
 * once; a run that finishes frees a place and wakes the job.
 */
export function runJob(hand: Hand, deps: RunJobDeps): WorkerJob {
  const { db, dialect, clock, settings, services } = deps;
  const leaseMs = settings.leaseSeconds * 1000;
  let running = 0;

  /** Writes a step's outcome and the run's next state; returns the run when it goes on at once. */
  async function record(
    trx: Db,
    run: WorkflowRun,
    definition: Definition,
    stepKey: string,
    outcome: Done | { kind: 'retry' | 'fail'; error: StepError },
    startedAt: number,
  ): Promise<WorkflowRun | null> {
    const now = clock.now();
    let changes: RunChanges;
    let goesOn = false;
    if (outcome.kind === 'done') {
      const moved = await moveRun(trx, run, definition, stepKey, outcome.connection, now);
      goesOn = moved.due && !hand.stopping;
      changes = {
        ...moved.changes,
        ...(moved.finished ? {} : goesOn ? { lease_until: now + leaseMs } : { lease_owner: null, lease_until: null }),
      };
      await updateWorkflowRunStep(trx, run.step_id!, {
        status: outcome.status,
        output: outcome.output,
        started_at:
          run.step_state === 'waiting' || run.step_state === 'event_received'
            ? (run.step_started_at ?? startedAt)
            : startedAt,
        completed_at: now,
        attempts: run.attempts + 1,
      });
    } else {
      const attempts = run.attempts + 1;
      const schedule = settings.retrySchedule;
      const final = outcome.kind === 'fail' || attempts > schedule.length;
      await updateWorkflowRunStep(trx, run.step_id!, {
        status: final ? 'failed' : 'running',
        error: outcome.error,
        started_at: startedAt,
        attempts,
        ...(final ? { completed_at: now } : {}),
      });
      if (final)
        hand.log.warn(
          {
            runId: run.id,
            workflowId: run.workflow_id,
            step: stepKey,
            code: outcome.error.code,
            error: outcome.error.message,
          },
          'workflow run failed',
        );
      changes = final
        ? await failRun(trx, run, `step "${stepKey}" failed: ${outcome.error.message}`, now)
        : {
            attempts,
            next_at: now + schedule[attempts - 1]! * 1000,
            lease_owner: null,
            lease_until: null,
            updated_at: now,
          };
    }
    // Lost the lease (another node took the run) or the run was cancelled: nothing of this commits.
    if (!(await updateLeasedWorkflowRun(trx, run.id, hand.owner, changes))) throw new LeaseLost();
    return goesOn ? { ...run, ...changes } : null;
  }

  async function contactOf(run: WorkflowRun): Promise<SubscriberView | null> {
    if (!run.subscriber_id) return null;
    try {
      return await services.subscribers.get(run.workspace_id, run.subscriber_id);
    } catch (err) {
      if (isAppError(err) && err.code === 'not_found') return null;
      throw err;
    }
  }

  /** Executes a claimed run's steps until it waits, finishes, must retry, or the node stops (then the kernel gives it back). */
  async function execute(claimed: WorkflowRun): Promise<void> {
    let run: WorkflowRun | null = claimed;
    let workspace: Workspace | undefined;
    try {
      while (run && !hand.stopping) {
        const current: WorkflowRun = run;
        const definition = await deps.definitions.get(db, current.version_id);
        const step = findStep(definition, current.step_key ?? '');
        const startedAt = clock.now();
        if (!step) {
          const missing = {
            kind: 'fail' as const,
            error: { code: 'internal_error', message: 'the step is not in the workflow version' },
          };
          run = await deps.batcher.run((trx) =>
            record(trx, current, definition, current.step_key ?? '?', missing, startedAt),
          );
          continue;
        }
        workspace ??= await findWorkspace(db, current.workspace_id);
        if (!workspace) break; // being deleted with its runs
        const contact = await contactOf(current);
        const commit = (trx: Db, done: Done) => record(trx, current, definition, step.key, done, startedAt);
        let result;
        try {
          result = await executeStep({
            db,
            services,
            workspace,
            run: current,
            step,
            contact,
            context: runContext(current, contact),
            now: startedAt,
            commit,
          });
        } catch (err) {
          if (err instanceof LeaseLost) throw err;
          hand.log.error({ err, runId: current.id, step: step.key }, 'workflow step failed unexpectedly');
          result = {
            kind: 'retry' as const,
            error: { code: 'internal_error', message: 'the step could not be completed; it will be retried' },
          };
        }
        if (result.kind === 'recorded') run = result.next;
        else {
          const outcome = result;
          run = await deps.batcher.run((trx) => record(trx, current, definition, step.key, outcome, startedAt));
        }
      }
      // Waiting, finished or failed: recorded with the lease given up. Stopping: still in hand.
      if (!run) hand.settle([claimed.id]);
    } catch (err) {
      if (err instanceof LeaseLost) {
        hand.log.info({ runId: claimed.id }, 'workflow run taken by another node or cancelled; this node dropped it');
        hand.settle([claimed.id]);
        return;
      }
      // The database is unavailable, most likely: the lease runs out and the run is claimed again.
      hand.log.error({ err, runId: claimed.id }, 'workflow run could not be recorded');
    }
  }

  return {
    table: 'workflow_runs',
    wakeOn: ['workflow_runs'],
    leaseMs,
    graceMs: 30_000,
    async pass(): Promise<Next> {
      const room = settings.concurrency - running;
      if (room <= 0) return { sleep: settings.pollInterval, onWork: 'ignore' };
      const runs = await claimDueWorkflowRuns(db, dialect, hand.lease(), room);
      hand.hold(runs.map((r) => r.id));
      for (const run of runs) {
        running++;
        hand.run(() =>
          execute(run).finally(() => {
            running--;
            // A place is free: more may be due.
            hand.wake();
          }),
        );
      }
      return runs.length === room ? 'again' : { sleep: settings.pollInterval, onWork: 'now' };
    },
    halt: () => [],
  };
}
