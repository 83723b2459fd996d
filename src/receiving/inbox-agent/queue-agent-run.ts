import { newId } from '../../shared/ids.js';
import type { Db } from '../../store/db.js';
import { findAgent, saveAgentRun } from '../../store/inboxes.js';

/**
 * A new message for the inbox's agent, when the inbox has one that may do something (at least
 * one action allowed): a run, written in the transaction that files the message.
 */
export async function queueAgentRun(trx: Db, m: { workspaceId: string; inboxId: string; threadId: string; messageId: string }, now: number): Promise<void> {
  const agent = await findAgent(trx, m.inboxId);
  if (!agent || agent.actions.length === 0) return;
  await saveAgentRun(trx, {
    id: newId(),
    workspace_id: m.workspaceId,
    inbox_id: m.inboxId,
    thread_id: m.threadId,
    message_id: m.messageId,
    status: 'pending',
    attempts: 0,
    next_attempt_at: now,
    started_at: null,
    actions: null,
    error: null,
    created_at: now,
    updated_at: now,
    lease_owner: null,
    lease_until: null,
  });
}
