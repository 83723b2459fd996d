import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ServiceDeps } from '../services/deps.js';
import { isAppError } from '../shared/errors.js';
import type { CommitBatcher } from '../store/commit-batcher.js';
import type { Db } from '../store/db.js';
import type { Workspace, WorkflowRun, WorkflowTrigger } from '../store/tables.js';
import { claimWorkflowTriggers, releaseWorkflowTriggers } from '../store/workflow-triggers.js';
import { claimDueWorkflowRuns, releaseWorkflowRuns, updateLeasedWorkflowRun, updateWorkflowRunStep, type RunChanges } from '../store/workflow-runs.js';
import { findWorkspace } from '../store/workspaces.js';
import { failRun, moveRun } from '../services/workflows/advance-run.js';
import { DefinitionCache } from '../services/workflows/definition-cache.js';
import { findStep, type Definition } from '../services/workflows/definition.js';
import { runContext } from '../services/workflows/run-context.js';
import { createRunStarter, LeaseLost } from '../services/workflows/start-runs.js';
import type { SubscriberView } from '../services/subscribers.js';
import { executeStep, type Done, type StepError, type StepServices } from './execute-step.js';

export interface WorkflowRunner {
  start(): void;
  /** Looks for triggers and due runs now rather than at the next poll. */
  wake(): void;
  /** Stops claiming; steps executing finish, and their runs are given back at the next step. */
  stop(): Promise<void>;
}

export interface RunnerDeps extends ServiceDeps {
  services: StepServices & { batcher: CommitBatcher };
}

/** Triggers claimed at a time. */
const TRIGGER_BATCH = 50;

/**
 * The workflow runner, built like the delivery workers and the webhook dispatcher: the
 * trigger outbox and the due runs are rows claimed with leases (SKIP LOCKED on PostgreSQL),
 * so several nodes share them and a node that dies leaves rows another takes once the lease
 * ends. Each claimed run executes its steps one after another until it waits (a delay, a
 * wait for an event), finishes, or must retry; every step's outcome and the run's next state
 * commit in one transaction, under the lease.
 */
export function createWorkflowRunner(deps: RunnerDeps): WorkflowRunner {
  const { db, dialect, clock, logger, services } = deps;
  const settings = deps.config.workflows;
  const log = logger.child({ component: 'workflows' });
  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const leaseMs = settings.leaseSeconds * 1000;
  const definitions = new DefinitionCache();
  const starter = createRunStarter({ ...deps, subscribers: services.subscribers, definitions, batcher: services.batcher });

  const running = new Set<Promise<void>>();
  let started = false;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | null = null;
  let again = false;

  /** Writes a step's outcome and the run's next state; returns the run when it goes on at once. */
  async function record(trx: Db, run: WorkflowRun, definition: Definition, stepKey: string, outcome: Done | { kind: 'retry' | 'fail'; error: StepError }, startedAt: number): Promise<WorkflowRun | null> {
    const now = clock.now();
    let changes: RunChanges;
    let goesOn = false;
    if (outcome.kind === 'done') {
      const moved = await moveRun(trx, run, definition, stepKey, outcome.connection, now);
      goesOn = moved.due && !stopping;
      changes = { ...moved.changes, ...(moved.finished ? {} : goesOn ? { lease_until: now + leaseMs } : { lease_owner: null, lease_until: null }) };
      await updateWorkflowRunStep(trx, run.step_id!, {
        status: outcome.status,
        output: outcome.output === null ? null : JSON.stringify(outcome.output),
        started_at: run.step_state === 'waiting' || run.step_state === 'event_received' ? (run.step_started_at ?? startedAt) : startedAt,
        completed_at: now,
        attempts: run.attempts + 1,
      });
    } else {
      const attempts = run.attempts + 1;
      const schedule = settings.retrySchedule;
      const final = outcome.kind === 'fail' || attempts > schedule.length;
      await updateWorkflowRunStep(trx, run.step_id!, {
        status: final ? 'failed' : 'running',
        error: JSON.stringify(outcome.error),
        started_at: startedAt,
        attempts,
        ...(final ? { completed_at: now } : {}),
      });
      if (final) log.info({ runId: run.id, workflowId: run.workflow_id, step: stepKey, code: outcome.error.code }, 'workflow run failed');
      changes = final
        ? await failRun(trx, run, `step "${stepKey}" failed: ${outcome.error.message}`, now)
        : { attempts, next_at: now + schedule[attempts - 1]! * 1000, lease_owner: null, lease_until: null, updated_at: now };
    }
    // Lost the lease (another node took the run) or the run was cancelled: nothing of this commits.
    if (!(await updateLeasedWorkflowRun(trx, run.id, owner, changes))) throw new LeaseLost();
    return goesOn ? ({ ...run, ...changes } as WorkflowRun) : null;
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

  /** Executes a claimed run's steps until it waits, finishes, must retry, or the node stops. */
  async function execute(claimed: WorkflowRun): Promise<void> {
    let run: WorkflowRun | null = claimed;
    let workspace: Workspace | undefined;
    try {
      while (run) {
        if (stopping) {
          await releaseWorkflowRuns(db, owner, [run.id]);
          return;
        }
        const current: WorkflowRun = run;
        const definition = await definitions.get(db, current.version_id);
        const step = findStep(definition, current.step_key ?? '');
        const startedAt = clock.now();
        if (!step) {
          const missing = { kind: 'fail' as const, error: { code: 'internal_error', message: 'the step is not in the workflow version' } };
          run = await services.batcher.run((trx) => record(trx, current, definition, current.step_key ?? '?', missing, startedAt));
          continue;
        }
        workspace ??= await findWorkspace(db, current.workspace_id);
        if (!workspace) return; // being deleted with its runs
        const contact = await contactOf(current);
        const commit = (trx: Db, done: Done) => record(trx, current, definition, step.key, done, startedAt);
        let result;
        try {
          result = await executeStep({ db, services, workspace, run: current, step, contact, context: runContext(current, contact), now: startedAt, commit });
        } catch (err) {
          if (err instanceof LeaseLost) throw err;
          log.error({ err, runId: current.id, step: step.key }, 'workflow step failed unexpectedly');
          result = { kind: 'retry' as const, error: { code: 'internal_error', message: 'the step could not be completed; it will be retried' } };
        }
        if (result.kind === 'recorded') run = result.next;
        else {
          const outcome = result;
          run = await services.batcher.run((trx) => record(trx, current, definition, step.key, outcome, startedAt));
        }
      }
    } catch (err) {
      if (err instanceof LeaseLost) {
        log.info({ runId: claimed.id }, 'workflow run taken by another node or cancelled; this node dropped it');
        return;
      }
      // The database is unavailable, most likely: the lease runs out and the run is claimed again.
      log.error({ err, runId: claimed.id }, 'workflow run could not be recorded');
    }
  }

  async function consume(trigger: WorkflowTrigger): Promise<void> {
    try {
      const result = await starter.consume(trigger, owner);
      if (result && result.started + result.resumed > 0) log.debug({ triggerId: trigger.id, event: trigger.event_name, ...result }, 'workflow trigger consumed');
    } catch (err) {
      // Left leased: tried again when the lease ends.
      log.error({ err, triggerId: trigger.id, event: trigger.event_name }, 'workflow trigger could not be consumed');
    }
  }

  /** Claims a batch of triggers and consumes them, side by side: a claim holds at most one trigger per contact. Returns how many it claimed. */
  async function consumeTriggers(): Promise<number> {
    const now = clock.now();
    const triggers = await claimWorkflowTriggers(db, dialect, { owner, now, leaseUntil: now + leaseMs, limit: TRIGGER_BATCH });
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(settings.concurrency, triggers.length) }, async () => {
        while (next < triggers.length && !stopping) await consume(triggers[next++]!);
      }),
    );
    if (next < triggers.length) await releaseWorkflowTriggers(db, owner, triggers.slice(next).map((t) => t.id));
    return triggers.length;
  }

  /** Claims due runs while this node has room; they execute in the background. */
  async function claimRuns(): Promise<void> {
    for (;;) {
      const room = settings.concurrency - running.size;
      if (stopping || room <= 0) return;
      const now = clock.now();
      const runs = await claimDueWorkflowRuns(db, dialect, { owner, now, leaseUntil: now + leaseMs, limit: room });
      for (const run of runs) {
        const p: Promise<void> = execute(run).finally(() => {
          running.delete(p);
          // A slot is free: more may be due.
          wake();
        });
        running.add(p);
      }
      if (runs.length < room) return;
    }
  }

  /** Triggers (they start runs), then due runs; again while triggers keep coming in full batches. */
  async function poll(): Promise<void> {
    for (;;) {
      if (stopping) return;
      const claimed = await consumeTriggers();
      await claimRuns();
      if (claimed < TRIGGER_BATCH) return;
    }
  }

  function wake(): void {
    if (!started || stopping) return;
    if (polling) {
      again = true;
      return;
    }
    polling = poll()
      .catch((err: unknown) => log.error({ err }, 'workflow poll failed'))
      .finally(() => {
        polling = null;
        if (again) {
          again = false;
          wake();
        }
      });
  }

  return {
    start() {
      if (started) return;
      started = true;
      timer = setInterval(wake, settings.pollInterval);
      timer.unref();
      wake();
      log.info({ owner, concurrency: settings.concurrency }, 'workflow runner started');
    },
    wake,
    async stop() {
      if (!started || stopping) return;
      stopping = true;
      clearInterval(timer);
      await polling;
      await Promise.allSettled([...running]);
      log.info('workflow runner stopped');
    },
  };
}
