import { isAppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import { findSubscriber, findSubscriberByEmail } from '../store/subscribers.js';
import { removeLeasedWorkflowTrigger, type WorkflowTrigger } from '../store/workflow-triggers.js';
import {
  listRunsWaitingFor,
  resumeWaitingWorkflowRun,
  saveWorkflowRun,
  saveWorkflowRunStep,
  updateWorkflowRun,
  wasInWorkflowRun,
  type WorkflowRun,
} from '../store/workflow-runs.js';
import { listEnabledWorkflowsFor } from '../store/workflows.js';
import type { Clock } from '../shared/clock.js';
import type { Db } from '../store/infra/db.js';
import type { SubscriberService, SubscriberView } from '../services/marketing/subscribers.js';
import { moveRun, recordRunStarted } from './advance-run.js';
import { evaluateRule } from './evaluate-rule.js';
import type { DefinitionCache } from './definition-cache.js';
import { findStep, triggerOf } from '../services/workflows/definition.js';
import { contactFields } from './run-context.js';

interface RunStarter {
  /**
   * Acts on one trigger this node holds: resumes the contact's runs waiting for the event,
   * then starts a run of every enabled workflow it triggers, and deletes the trigger, all in
   * one transaction. Returns how many runs started or resumed; false when another node took
   * the trigger meanwhile (nothing was done).
   */
  consume(trigger: WorkflowTrigger, owner: string): Promise<{ started: number; resumed: number } | false>;
}

/** The lease on a trigger or run passed to another node: this node's work on it is dropped. */
export class LeaseLost extends Error {
  constructor() {
    super('lease lost');
  }
}

export function createRunStarter(deps: {
  db: Db;
  clock: Clock;
  subscribers: SubscriberService;
  definitions: DefinitionCache;
  batcher: CommitBatcher;
}): RunStarter {
  const { db, clock, subscribers, definitions, batcher } = deps;

  /** The contact a trigger names; an address nobody has yet becomes a contact when a workflow starts for it (as Resend does). */
  async function contactOf(trigger: WorkflowTrigger, creates: boolean): Promise<SubscriberView | null> {
    const ws = trigger.workspace_id;
    const row = trigger.subscriber_id
      ? await findSubscriber(db, ws, trigger.subscriber_id)
      : trigger.email
        ? await findSubscriberByEmail(db, ws, trigger.email)
        : undefined;
    if (row) return subscribers.get(ws, row.id);
    if (!creates || trigger.subscriber_id || !trigger.email) return null;
    try {
      return (await subscribers.upsert(ws, { email: trigger.email }, 'workflow')).subscriber;
    } catch (err) {
      if (isAppError(err) && err.code === 'validation_error') return null;
      throw err;
    }
  }

  return {
    async consume(trigger, owner) {
      const ws = trigger.workspace_id;
      const workflows = await listEnabledWorkflowsFor(db, ws, trigger.event_name);
      const contact = await contactOf(trigger, workflows.length > 0);
      const { payload } = trigger;
      // An open or click by a machine (classified by services/tracking.ts) counts only where asked for.
      const byMachine = payload.is_machine === true;
      const fields = contact ? contactFields(contact) : null;
      try {
        // Group commit: triggers consumed side by side share their transactions.
        return await batcher.run(async (trx) => {
          if (!(await removeLeasedWorkflowTrigger(trx, trigger.id, owner))) throw new LeaseLost();
          if (!contact) return { started: 0, resumed: 0 };
          const now = clock.now();
          let resumed = 0;
          // Waits first: a run this event starts must not take it as the event it then waits for.
          for (const run of await listRunsWaitingFor(trx, ws, contact.id, trigger.event_name, trigger.created_at)) {
            const step = findStep(await definitions.get(trx, run.version_id), run.step_key ?? '');
            if (step?.type !== 'wait_for_event' || (byMachine && !step.config.include_machines)) continue;
            const waited = run.wait_events;
            const filter = step.config.filter_rule;
            if (filter && !evaluateRule(filter, { contact: fields, event: payload, wait_events: waited })) continue;
            if (
              await resumeWaitingWorkflowRun(
                trx,
                run,
                trigger.event_name,
                { ...waited, [trigger.event_name]: payload },
                now,
              )
            )
              resumed++;
          }
          let started = 0;
          for (const workflow of workflows) {
            const definition = await definitions.get(trx, workflow.version_id);
            const trigger_ = triggerOf(definition);
            if (byMachine && !trigger_.config.include_machines) continue;
            if (!workflow.allow_reentry && (await wasInWorkflowRun(trx, workflow.id, contact.id, trigger.created_at)))
              continue;
            const run: WorkflowRun = {
              id: newId(),
              workspace_id: ws,
              workflow_id: workflow.id,
              version_id: workflow.version_id,
              subscriber_id: contact.id,
              email: contact.email,
              test: trigger.test,
              status: 'running',
              trigger_event: trigger.event_name,
              trigger_payload: trigger.payload,
              wait_events: {},
              step_key: trigger_.key,
              step_id: newId(),
              step_state: 'ready',
              step_started_at: now,
              wait_event: null,
              next_at: null,
              attempts: 0,
              steps_taken: 1,
              exclusive_key: workflow.allow_reentry ? null : `${workflow.id}:${contact.id}`,
              lease_owner: null,
              lease_until: null,
              error: null,
              entered_at: trigger.created_at,
              created_at: now,
              updated_at: now,
              completed_at: null,
            };
            // Taken: the contact is in a run of this workflow right now (another node started it).
            if (!(await saveWorkflowRun(trx, run))) continue;
            await saveWorkflowRunStep(trx, {
              id: run.step_id!,
              run_id: run.id,
              step_key: trigger_.key,
              type: 'trigger',
              status: 'completed',
              output: { event: trigger.event_name },
              error: null,
              attempts: 0,
              created_at: now,
              started_at: now,
              completed_at: now,
            });
            await recordRunStarted(trx, run, now);
            const moved = await moveRun(trx, run, definition, trigger_.key, 'default', now);
            await updateWorkflowRun(trx, run.id, moved.changes);
            started++;
          }
          return { started, resumed };
        });
      } catch (err) {
        if (err instanceof LeaseLost) return false;
        throw err;
      }
    },
  };
}
