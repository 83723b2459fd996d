import { validationError } from '../../shared/errors.js';
import { findAgent, saveAgent } from '../../store/inboxes.js';
import type { ServiceDeps } from '../deps.js';
import type { InboxThreadService } from './inbox-threads.js';
import { checkNoNul } from './send-from-inbox.js';

/**
 * The settings of an inbox's agent (Resend's `inboxes.agent`): instructions, tone and the
 * actions it may take. They are stored and served; no agent runs here yet, and the answer
 * says so (`runtime`), so that nobody waits for an agent that will not act.
 */

export const AGENT_ACTIONS = ['draft_reply', 'forward_thread', 'add_labels', 'assign_thread', 'mark_as_spam', 'archive', 'move_to_trash'] as const;
export const AGENT_TONES = ['concise_professional', 'concise_casual', 'expanded_professional', 'expanded_casual'] as const;
export type AgentAction = (typeof AGENT_ACTIONS)[number];
export type AgentTone = (typeof AGENT_TONES)[number];
export const MAX_INSTRUCTIONS = 10_000;

export interface AgentSettings {
  object: 'inbox_agent';
  instructions: string | null;
  tone: AgentTone | null;
  actions: AgentAction[];
  runtime: { enabled: false; reason: string };
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

const RUNTIME = { enabled: false as const, reason: 'no agent runs on this server: the settings are stored and served, and no message is passed to an agent' };

export function createInboxAgentService(deps: ServiceDeps & { inboxThreads: InboxThreadService }): InboxAgentService {
  const { db, clock, inboxThreads } = deps;

  async function read(inboxId: string): Promise<AgentSettings> {
    const row = await findAgent(db, inboxId);
    return {
      object: 'inbox_agent',
      instructions: row?.instructions ?? null,
      tone: (row?.tone as AgentTone | null | undefined) ?? null,
      actions: row ? (JSON.parse(row.actions) as AgentAction[]) : [],
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
      await saveAgent(db, { inbox_id: inbox.id, workspace_id: workspaceId, instructions: next.instructions, tone: next.tone, actions: JSON.stringify(next.actions), updated_at: clock.now() });
      await deps.durable();
      return { id: inbox.id, settings: { object: 'inbox_agent', ...next, runtime: RUNTIME } };
    },
  };
}
