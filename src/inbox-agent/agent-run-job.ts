import type { Config } from '../config/schema.js';
import type { Services } from '../services/index.js';
import { messageIdOf } from '../services/inboxes/inbox-views.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import type { Logger } from '../shared/logger.js';
import type { Db, Dialect } from '../store/infra/db.js';
import { prefixedSubject } from '../messages/quote-message.js';
import { checkForward } from './forward-policy.js';
import {
  claimAgentRuns,
  findAgent,
  findInboxMessage,
  findLabelByName,
  finishAgentRun,
  listMessagesOfThreads,
  type InboxAgent,
  type InboxAgentRun,
  type InboxMessage,
} from '../store/inboxes.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';
import { askAgent, type AgentAction, type ThreadMessage } from './ask-agent.js';

/**
 * The inbox agent at work, a job on the worker kernel: each new message of an inbox whose
 * agent may act is a run (a row); a node claims one under a lease, passes the message to the
 * model with its thread, and carries out the actions it answers with through the services,
 * each only if the inbox's settings allow it, recorded on the run (shown with the thread).
 * Nothing is sent unless the model asks for `forward_thread`, the settings allow it and every
 * address is one the operator allowed (forward-policy.ts); a forward elsewhere, and every
 * reply, is only ever a draft. A run whose node died is taken over by any node once its lease
 * runs out (its actions may then be carried out twice, as any leased work is at least once).
 */

interface InboxAgentDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  config: Config;
  resolver: DnsResolver;
  logger: Logger;
  services: Services;
}
/** Messages of the thread shown to the agent, the newest ones; characters of each. */
const TRANSCRIPT_MESSAGES = 10;
const TRANSCRIPT_CHARS = 8000;
/** Seconds before the next try of a run whose agent did not answer: doubled each time, at most an hour. */
const RETRY_BASE_MS = 30_000;

/** `drafted`: what the agent asked to send was saved as a draft for a person instead. */
type ActionRecord = AgentAction & { result: 'done' | 'drafted' | 'refused' | 'failed'; detail?: string };

const threadOf = (messages: InboxMessage[]): ThreadMessage[] =>
  messages.slice(-TRANSCRIPT_MESSAGES).map((m) => ({
    from: m.from_header ?? '',
    to: m.to_addresses,
    cc: m.cc_addresses,
    date: new Date(m.at).toUTCString(),
    subject: m.subject ?? '',
    text: (m.search_text ?? '').slice(0, TRANSCRIPT_CHARS),
  }));

/** Runs in hand at once per node: the model is slow and shared, and the runs of a thread are ordered by their due time. */
const CONCURRENCY = 1;

export function agentRunJob(hand: Hand, deps: InboxAgentDeps): WorkerJob {
  const settings = deps.config.inboxes.agent;
  let running = 0;
  return {
    table: 'inbox_agent_runs',
    wakeOn: ['inbox_agent_runs'],
    // Twice the model's timeout (renewed while the run is in hand): a run outlives a slow answer, not its node.
    leaseMs: 2 * settings.timeoutSeconds * 1000,
    graceMs: settings.timeoutSeconds * 1000,
    async pass(): Promise<Next> {
      const room = CONCURRENCY - running;
      if (room <= 0 || hand.stopping) return { sleep: settings.pollInterval, onWork: 'ignore' };
      const runs = await claimAgentRuns(deps.db, deps.dialect, hand.lease(), room);
      hand.hold(runs.map((r) => r.id));
      for (const run of runs) {
        running++;
        hand.run(async () => {
          try {
            await runOne(deps, hand.owner, run);
          } finally {
            hand.settle([run.id]);
            running--;
            hand.wake();
          }
        });
      }
      return { sleep: settings.pollInterval, onWork: runs.length < room ? 'now' : 'ignore' };
    },
    halt: () => [],
  };
}

async function runOne(deps: InboxAgentDeps, owner: string, run: InboxAgentRun): Promise<void> {
  const { db, clock, config, services } = deps;
  const log = deps.logger.child({ component: 'inbox-agent', runId: run.id, workspaceId: run.workspace_id });
  const settings = config.inboxes.agent;
  const [agent, message, inbox] = await Promise.all([
    findAgent(db, run.inbox_id),
    findInboxMessage(db, run.message_id),
    services.inboxThreads.inbox(run.workspace_id, run.inbox_id).catch(() => undefined),
  ]);
  const allowed = agent?.actions ?? [];
  if (!agent || !message || !inbox || allowed.length === 0) {
    await finishAgentRun(db, run.id, owner, {
      status: 'done',
      attempts: run.attempts,
      next_attempt_at: run.next_attempt_at,
      actions: [],
      error: 'nothing to do: the message, its inbox or the agent is gone, or no action is allowed',
      updated_at: clock.now(),
    });
    return;
  }
  let actions: AgentAction[];
  try {
    const messages = (await listMessagesOfThreads(db, [run.thread_id])).filter((m) => m.at <= message.at);
    actions = await askAgent(settings, deps.resolver, {
      inboxAddress: inbox.address,
      instructions: agent.instructions,
      tone: agent.tone,
      allowed,
      thread: threadOf(messages),
    });
  } catch (err) {
    const attempts = run.attempts + 1;
    const failed = attempts >= settings.attempts;
    const error = (err as Error).message.slice(0, 500);
    log.warn({ attempts, error }, failed ? 'inbox agent run failed' : 'inbox agent did not answer; trying again later');
    await finishAgentRun(db, run.id, owner, {
      status: failed ? 'failed' : 'pending',
      attempts,
      next_attempt_at: clock.now() + Math.min(RETRY_BASE_MS * 2 ** (attempts - 1), 3600_000),
      actions: null,
      error,
      updated_at: clock.now(),
    });
    return;
  }
  const records: ActionRecord[] = [];
  for (const action of actions) records.push(await carryOut(deps, run, message, agent, action));
  const recorded = await finishAgentRun(db, run.id, owner, {
    status: 'done',
    attempts: run.attempts + 1,
    next_attempt_at: run.next_attempt_at,
    actions: records,
    error: null,
    updated_at: clock.now(),
  });
  log.info(
    { actions: records.map((r) => `${r.type}:${r.result}`), recorded },
    recorded
      ? 'inbox agent run done'
      : 'inbox agent run done, but another node had taken it over (its lease ran out): its record stands',
  );
}

async function carryOut(
  deps: InboxAgentDeps,
  run: InboxAgentRun,
  message: InboxMessage,
  agent: InboxAgent,
  action: AgentAction,
): Promise<ActionRecord> {
  const { services, db } = deps;
  if (!agent.actions.includes(action.type))
    return { ...action, result: 'refused', detail: "not among the actions the inbox's settings allow" };
  const ws = run.workspace_id;
  try {
    switch (action.type) {
      case 'draft_reply': {
        const draft = await services.inboxDrafts.create(ws, run.inbox_id, {
          threadId: run.thread_id,
          replyToEmailId: messageIdOf(message),
          text: action.text!,
        });
        return { ...action, result: 'done', detail: `draft ${draft.id}` };
      }
      case 'add_labels': {
        const labels = await Promise.all((action.labels ?? []).map((name) => findLabelByName(db, run.inbox_id, name)));
        const known = labels.filter((l) => l !== undefined);
        if (known.length === 0)
          return { ...action, result: 'refused', detail: 'no label of the inbox has any of these names' };
        await services.inboxThreads.addLabels(
          ws,
          run.inbox_id,
          run.thread_id,
          known.map((l) => l.id),
        );
        const unknown = (action.labels ?? []).filter((_, i) => !labels[i]);
        return {
          ...action,
          result: 'done',
          ...(unknown.length ? { detail: `no such label: ${unknown.join(', ')}` } : {}),
        };
      }
      case 'archive':
      case 'mark_as_spam':
      case 'move_to_trash': {
        const folder = action.type === 'archive' ? 'archive' : action.type === 'mark_as_spam' ? 'spam' : 'trash';
        await services.inboxThreads.update(ws, run.inbox_id, run.thread_id, { folder });
        return { ...action, result: 'done' };
      }
      case 'forward_thread': {
        const verified = (await services.domains.list(ws))
          .filter((d) => d.status === 'verified')
          .map((d) => d.domain_name);
        const verdict = checkForward(action.to!, verified, agent.forward_to);
        if ('invalid' in verdict) return { ...action, result: 'refused', detail: verdict.invalid };
        if (!verdict.allowed) {
          const draft = await services.inboxDrafts.create(ws, run.inbox_id, {
            threadId: run.thread_id,
            replyToEmailId: messageIdOf(message),
            to: verdict.to,
            subject: prefixedSubject('Fwd', message.subject),
            text: action.text ?? '',
          });
          return {
            ...action,
            result: 'drafted',
            detail: `${verdict.outside.join(', ')} not among the addresses the agent may forward to (the workspace's verified domains and the agent's forward_to): saved as draft ${draft.id} for a person`,
          };
        }
        const workspace = await services.workspaces.get(ws);
        const sent = await services.inboxReplies.forward(
          workspace,
          { test: false, senderDomainId: null },
          run.inbox_id,
          run.thread_id,
          messageIdOf(message),
          { to: verdict.to, ...(action.text ? { text: action.text } : {}) },
        );
        return { ...action, result: 'done', detail: `email ${sent.id}` };
      }
      case 'assign_thread':
        return { ...action, result: 'refused', detail: 'threads have no assignees here' };
    }
  } catch (err) {
    return { ...action, result: 'failed', detail: (err as Error).message.slice(0, 500) };
  }
}
