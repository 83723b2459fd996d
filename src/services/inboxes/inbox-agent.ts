import type { AgentActionType } from '../../receiving/inbox-agent/ask-agent.js';
import { validationError } from '../../shared/errors.js';
import { findAgent, saveAgent } from '../../store/inboxes.js';
import type { ServiceDeps } from '../deps.js';
import type { InboxThreadService } from './inbox-threads.js';
import { checkNoNul } from './send-from-inbox.js';

/**
 * The settings of an inbox's agent (Resend's `inboxes.agent`): instructions, tone and the
 * actions it may take. The agent runs (receiving/inbox-agent/) when `inboxes.agent.url` names
 * a chat-completions endpoint; `runtime` says whether it does, so that nobody waits for an
 * agent that will not act.
 */

export { AGENT_ACTION_TYPES as AGENT_ACTIONS } from '../../receiving/inbox-agent/ask-agent.js';
export const AGENT_TONES = ['concise_professional', 'concise_casual', 'expanded_professional', 'expanded_casual'] as const;
export type AgentAction = AgentActionType;
export type AgentTone = (typeof AGENT_TONES)[number];
export const MAX_INSTRUCTIONS = 10_000;

export interface AgentSettings {
  object: 'inbox_agent';
  instructions: string | null;
  tone: AgentTone | null;
  actions: AgentAction[];
  runtime: { enabled: boolean; reason: string | null; model: string | null };
}

export interface AgentChanges {
  instructions?: string | null | undefined;
  tone?: AgentTone | null | undefined;
  actions?: AgentAction[] | undefined;
}

export interface InboxAgentService {
  get(workspaceId: string, inbox: string): Promise<AgentSettings>;
  update(workspaceId: string, inbox: string, changes: AgentChanges): Promise<{ id: string; settings: AgentSettings }>;
}

export function createInboxAgentService(deps: ServiceDeps & { inboxThreads: InboxThreadService }): InboxAgentService {
  const { db, clock, inboxThreads } = deps;
  const RUNTIME = deps.config.inboxes.agent.url
    ? { enabled: true, reason: null, model: deps.config.inboxes.agent.model || null }
    : { enabled: false, reason: 'no agent runs: inboxes.agent.url names no chat-completions endpoint; the settings are stored and served', model: null };

  async function read(inboxId: string): Promise<AgentSettings> {
    const row = await findAgent(db, inboxId);
    return {
      object: 'inbox_agent',
      instructions: row?.instructions ?? null,
      tone: (row?.tone as AgentTone | null | undefined) ?? null,
      actions: row ? (row.actions as AgentAction[]) : [],
      runtime: RUNTIME,
    };
  }

  return {
    async get(workspaceId, inboxRef) {
      return read((await inboxThreads.inbox(workspaceId, inboxRef)).id);
    },

    async update(workspaceId, inboxRef, changes) {
      if (changes.instructions === undefined && changes.tone === undefined && changes.actions === undefined) throw validationError('instructions', 'give instructions, tone or actions');
      if (typeof changes.instructions === 'string' && changes.instructions.length > MAX_INSTRUCTIONS) throw validationError('instructions', `at most ${MAX_INSTRUCTIONS} characters`);
      checkNoNul({ instructions: changes.instructions });
      const inbox = await inboxThreads.inbox(workspaceId, inboxRef);
      const current = await read(inbox.id);
      const next = {
        instructions: changes.instructions !== undefined ? changes.instructions : current.instructions,
        tone: changes.tone !== undefined ? changes.tone : current.tone,
        actions: changes.actions !== undefined ? [...new Set(changes.actions)] : current.actions,
      };
      await saveAgent(db, { inbox_id: inbox.id, workspace_id: workspaceId, instructions: next.instructions, tone: next.tone, actions: next.actions, updated_at: clock.now() });
      await deps.durable();
      return { id: inbox.id, settings: { object: 'inbox_agent', ...next, runtime: RUNTIME } };
    },
  };
}
