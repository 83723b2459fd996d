import { sha256Hex } from '../shared/crypto.js';
import { isAppError } from '../shared/errors.js';
import type { Db } from '../store/infra/db.js';
import { listSuppressionsCovering } from '../store/suppressions.js';
import type { Workspace } from '../store/workspaces.js';
import type { WorkflowRun } from '../store/workflow-runs.js';
import type { AudienceService } from '../services/marketing/audiences.js';
import type { IdempotencyService } from '../services/idempotency.js';
import { parseMailbox, parseMailboxes } from '../messages/addresses.js';
import type { SendService } from '../services/send/send-email.js';
import type { SubscriberService, SubscriberView } from '../services/marketing/subscribers.js';
import { evaluateRule, resolveVars, type RunContext } from './evaluate-rule.js';
import type { ConnectionType, Step } from '../services/workflows/definition.js';
import { LeaseLost } from './start-runs.js';

/**
 * Executing one step of a run. Expected outcomes are results, not exceptions: done (with the
 * connection to follow), skipped, retry later (a temporary failure), or failed for good. A
 * send records its outcome itself, in the transaction that queues the email.
 */

export interface StepError {
  code: string;
  message: string;
}

export type Done = {
  kind: 'done';
  status: 'completed' | 'skipped';
  connection: ConnectionType;
  output: Record<string, unknown> | null;
};
type StepResult =
  | Done
  | { kind: 'retry'; error: StepError }
  | { kind: 'fail'; error: StepError }
  /** The outcome was written with the step's effect; `next` is the run if it goes on at once. */
  | { kind: 'recorded'; next: WorkflowRun | null };

/** The services a step uses: the same ones every intake calls. */
export interface StepServices {
  send: SendService;
  subscribers: SubscriberService;
  audiences: AudienceService;
  idempotency: IdempotencyService;
}

interface StepInput {
  db: Db;
  services: StepServices;
  workspace: Workspace;
  run: WorkflowRun;
  step: Step;
  contact: SubscriberView | null;
  context: RunContext;
  /** When the step started (the injected clock). */
  now: number;
  /** Writes a done outcome in `trx` (the send's transaction); returns the run if it goes on at once. */
  commit(trx: Db, done: Done): Promise<WorkflowRun | null>;
}

const done = (connection: ConnectionType, output: Record<string, unknown> | null = null): Done => ({
  kind: 'done',
  status: 'completed',
  connection,
  output,
});
const skipped = (reason: string, extra: Record<string, unknown> = {}): Done => ({
  kind: 'done',
  status: 'skipped',
  connection: 'default',
  output: { reason, ...extra },
});

/** A service's error as an outcome: retryable ones (rate limits, outages) are retried, the rest fail the step. */
function failure(err: unknown): StepResult {
  if (isAppError(err))
    return { kind: err.retryable ? 'retry' : 'fail', error: { code: err.code, message: err.message } };
  return {
    kind: 'retry',
    error: { code: 'internal_error', message: 'the step could not be completed; it will be retried' },
  };
}

export async function executeStep(input: StepInput): Promise<StepResult> {
  const { run, step, context } = input;
  switch (step.type) {
    case 'trigger':
      return done('default');
    case 'delay':
      return done('default');
    case 'wait_for_event':
      // Due either because its event came, or because its timeout passed.
      return run.step_state === 'event_received'
        ? done('event_received', {
            event: step.config.event_name,
            payload: context.wait_events[step.config.event_name] ?? null,
          })
        : done('timeout', { timed_out: true });
    case 'condition': {
      const met = evaluateRule(step.config, context);
      return done(met ? 'condition_met' : 'condition_not_met', { result: met });
    }
    case 'send_email':
      return sendEmail(input, step);
    case 'contact_update':
      return updateContact(input, step);
    case 'add_to_segment':
      if (!input.contact) return skipped('contact_deleted');
      try {
        const { added } = await input.services.audiences.addMembers(run.workspace_id, step.config.segment_id, {
          subscriberIds: [input.contact.id],
        });
        return done('default', { segment_id: step.config.segment_id, added: added > 0 });
      } catch (err) {
        return failure(err);
      }
    case 'contact_delete':
      if (!input.contact) return done('default', { deleted: false });
      try {
        await input.services.subscribers.remove(run.workspace_id, input.contact.id);
        return done('default', { deleted: true });
      } catch (err) {
        if (isAppError(err) && err.code === 'not_found') return done('default', { deleted: false });
        return failure(err);
      }
  }
}

const text = (value: unknown): string | null =>
  value === null || value === undefined
    ? null
    : typeof value === 'string'
      ? value
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);

async function updateContact(input: StepInput, step: Step & { type: 'contact_update' }): Promise<StepResult> {
  const { contact, run, context } = input;
  if (!contact) return skipped('contact_deleted');
  const c = resolveVars(step.config, context) as Record<string, unknown>;
  const changes: Parameters<SubscriberService['update']>[2] = {};
  if ('first_name' in c) changes.first_name = text(c.first_name);
  if ('last_name' in c) changes.last_name = text(c.last_name);
  // A variable that names nothing (null) changes nothing: it must never re-subscribe anyone.
  if (c.unsubscribed === true || c.unsubscribed === 'true') changes.status = 'unsubscribed';
  else if (c.unsubscribed === false || c.unsubscribed === 'false') changes.status = 'subscribed';
  if (c.properties && typeof c.properties === 'object') {
    // Properties are the contact's metadata: set keys are replaced, null removes one, others stay.
    const merged: Record<string, unknown> = { ...(contact.metadata ?? {}) };
    for (const [k, v] of Object.entries(c.properties as Record<string, unknown>)) {
      if (v === null) delete merged[k];
      else merged[k] = v;
    }
    changes.metadata = Object.keys(merged).length === 0 ? null : merged;
  }
  try {
    await input.services.subscribers.update(run.workspace_id, contact.id, changes);
    return done('default', { changed: Object.keys(changes) });
  } catch (err) {
    if (isAppError(err) && err.code === 'not_found') return skipped('contact_deleted');
    return failure(err);
  }
}

/**
 * Sends the step's email to the run's contact, unless the contact is gone, unsubscribed or
 * suppressed (the step is skipped and the run goes on). The email is created under an
 * idempotency key derived from the run's step, in the transaction that moves the run on: a
 * step retried after a crash finds the key and never sends twice.
 */
async function sendEmail(input: StepInput, step: Step & { type: 'send_email' }): Promise<StepResult> {
  const { db, services, run, contact, context, workspace } = input;
  if (!contact) return skipped('contact_deleted');
  if (contact.status === 'unsubscribed') return skipped('unsubscribed');
  const covering = await listSuppressionsCovering(db, [run.workspace_id], [contact.email]);
  if (covering.length > 0)
    return skipped('suppressed', {
      suppression: { address: covering[0]!.address, reason: covering[0]!.reason, scope: covering[0]!.scope },
    });

  const key = `workflow-step:${run.step_id}`;
  let claim;
  try {
    // Locked no longer than this node's lease on the run: a node that takes the run over after a
    // crash takes the key over too. Whoever loses the lease cannot commit its email (the run's
    // update in the same transaction checks the lease), so the key never hides a lost send.
    claim = await services.idempotency.claim(
      run.workspace_id,
      key,
      sha256Hex(key),
      Math.max(1000, (run.lease_until ?? 0) - input.now),
    );
  } catch (err) {
    return failure(err);
  }
  if (claim.kind === 'replay') {
    // Sent by an earlier attempt whose run did not move on: the same email, not a second one.
    const sent = claim.body as { email_id?: string };
    return done('default', { email_id: sent.email_id ?? null, replayed: true });
  }
  const handle = claim.handle!;
  const c = step.config;
  const variables = {
    contact: context.contact ? { ...context.contact.properties, ...context.contact } : null,
    event: context.event,
    ...(resolveVars(c.template.variables ?? {}, context) as Record<string, unknown>),
  };
  try {
    let next: WorkflowRun | null = null;
    await services.send.send(
      workspace,
      {
        intake: 'workflow',
        test: run.test,
        from: c.from === undefined ? null : parseMailbox('from', c.from),
        to: [{ name: [contact.first_name, contact.last_name].filter(Boolean).join(' '), address: contact.email }],
        replyTo: c.reply_to === undefined ? undefined : parseMailboxes('reply_to', c.reply_to),
        subject: c.subject,
        templateId: c.template.id,
        variables,
        // Workflow mail is not transactional: one-click unsubscribe, marketing limits and scope.
        type: 'marketing',
        // In the metadata (legacy payloads, the email's record and events) and as tags (Resend's payloads).
        metadata: { workflow_id: run.workflow_id, workflow_run_id: run.id, workflow_step: step.key },
        tags: [`workflow_id:${run.workflow_id}`, `workflow_run_id:${run.id}`],
        subscriberId: contact.id,
      },
      {
        inTransaction: async (trx, results) => {
          const output = { email_id: results[0]!.id };
          await handle.complete(200, output, trx);
          next = await input.commit(trx, done('default', output));
        },
      },
    );
    return { kind: 'recorded', next };
  } catch (err) {
    await handle.release().catch(() => {});
    if (err instanceof LeaseLost) throw err;
    return failure(err);
  }
}
