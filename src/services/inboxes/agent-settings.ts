import { normalizeAddress } from '../../messages/addresses.js';
import { normalizeDomain } from '../../shared/domain-name.js';
import { validationError } from '../../shared/errors.js';
import { findAgent, saveAgent, type AgentActionType } from '../../store/inboxes.js';
import type { ServiceDeps } from '../deps.js';
import type { InboxThreadService } from './inbox-threads.js';
import { checkNoNul } from './send-from-inbox.js';

/**
 * The settings of an inbox's agent (Resend's `inboxes.agent`): instructions, tone and the
 * actions it may take. The agent itself runs (src/inbox-agent/) when `inboxes.agent.url` names
 * a chat-completions endpoint; `runtime` says whether it does, so that nobody waits for an
 * agent that will not act.
 */

export { AGENT_ACTION_TYPES as AGENT_ACTIONS } from '../../store/inboxes.js';
export const AGENT_TONES = [
  'concise_professional',
  'concise_casual',
  'expanded_professional',
  'expanded_casual',
] as const;
type AgentAction = AgentActionType;
type AgentTone = (typeof AGENT_TONES)[number];
export const MAX_INSTRUCTIONS = 10_000;
/** Entries of forward_to, at most. */
export const MAX_FORWARD_TO = 100;

interface AgentSettings {
  object: 'inbox_agent';
  instructions: string | null;
  tone: AgentTone | null;
  actions: AgentAction[];
  /**
   * Where forward_thread may send besides the workspace's verified domains: addresses, and
   * "@domain" for any address of a domain. A forward anywhere else is saved as a draft.
   */
  forward_to: string[];
  runtime: { enabled: boolean; reason: string | null; model: string | null };
}

interface AgentChanges {
  instructions?: string | null | undefined;
  tone?: AgentTone | null | undefined;
  actions?: AgentAction[] | undefined;
  forward_to?: string[] | undefined;
}

/** forward_to, checked and normalised: addresses as normalizeAddress makes them, "@domain" lower-cased. */
function forwardTargets(entries: string[]): string[] {
  if (entries.length > MAX_FORWARD_TO) throw validationError('forward_to', `at most ${MAX_FORWARD_TO} entries`);
  return [
    ...new Set(
      entries.map((entry, i) => {
        const value = entry.trim();
        const domain = value.startsWith('@') ? normalizeDomain(value.slice(1)) : null;
        const target = domain ? `@${domain}` : value.startsWith('@') ? null : normalizeAddress(value);
        if (!target)
          throw validationError(
            `forward_to[${i}]`,
            `"${value.slice(0, 100)}" is neither an email address nor "@domain"`,
          );
        return target;
      }),
    ),
  ];
}

export interface InboxAgentService {
  get(workspaceId: string, inbox: string): Promise<AgentSettings>;
  update(workspaceId: string, inbox: string, changes: AgentChanges): Promise<{ id: string; settings: AgentSettings }>;
}

export function createInboxAgentService(deps: ServiceDeps & { inboxThreads: InboxThreadService }): InboxAgentService {
  const { db, clock, inboxThreads } = deps;
  const RUNTIME = deps.config.inboxes.agent.url
    ? { enabled: true, reason: null, model: deps.config.inboxes.agent.model || null }
    : {
        enabled: false,
        reason:
          'no agent runs: inboxes.agent.url names no chat-completions endpoint; the settings are stored and served',
        model: null,
      };

  async function read(inboxId: string): Promise<AgentSettings> {
    const row = await findAgent(db, inboxId);
    return {
      object: 'inbox_agent',
      instructions: row?.instructions ?? null,
      tone: (row?.tone as AgentTone | null | undefined) ?? null,
      actions: row ? row.actions : [],
      forward_to: row?.forward_to ?? [],
      runtime: RUNTIME,
    };
  }

  return {
    async get(workspaceId, inboxRef) {
      return read((await inboxThreads.inbox(workspaceId, inboxRef)).id);
    },

    async update(workspaceId, inboxRef, changes) {
      if (
        changes.instructions === undefined &&
        changes.tone === undefined &&
        changes.actions === undefined &&
        changes.forward_to === undefined
      )
        throw validationError('instructions', 'give instructions, tone, actions or forward_to');
      if (typeof changes.instructions === 'string' && changes.instructions.length > MAX_INSTRUCTIONS)
        throw validationError('instructions', `at most ${MAX_INSTRUCTIONS} characters`);
      checkNoNul({ instructions: changes.instructions });
      const inbox = await inboxThreads.inbox(workspaceId, inboxRef);
      const current = await read(inbox.id);
      const next = {
        instructions: changes.instructions !== undefined ? changes.instructions : current.instructions,
        tone: changes.tone !== undefined ? changes.tone : current.tone,
        actions: changes.actions !== undefined ? [...new Set(changes.actions)] : current.actions,
        forward_to: changes.forward_to !== undefined ? forwardTargets(changes.forward_to) : current.forward_to,
      };
      await saveAgent(db, {
        inbox_id: inbox.id,
        workspace_id: workspaceId,
        instructions: next.instructions,
        tone: next.tone,
        actions: next.actions,
        forward_to: next.forward_to,
        updated_at: clock.now(),
      });
      await deps.durable();
      return { id: inbox.id, settings: { object: 'inbox_agent', ...next, runtime: RUNTIME } };
    },
  };
}
