import { toIso } from '../../shared/clock.js';
import type { InboxAgentRun, InboxLabel, InboxMessage, InboxThread } from '../../store/inboxes.js';

/**
 * Threads, their messages and labels as the Resend SDK declares them (InboxThread,
 * InboxThreadSummary, InboxMessage, InboxLabel in resend's index.d.mts).
 */

export const labelView = (l: InboxLabel) => ({
  object: 'inbox_label' as const,
  id: l.id,
  name: l.name,
  color: l.color,
  created_at: toIso(l.created_at),
});

export const threadLabelView = (l: InboxLabel) => ({ id: l.id, name: l.name, color: l.color });

/** The id a message goes by: its received email's, or the email we sent. */
export const messageIdOf = (m: InboxMessage): string => (m.received_email_id ?? m.email_id)!;

const messageAttachments = (m: InboxMessage) =>
  m.attachments.map((a) => ({
    id: a.id,
    filename: a.filename,
    content_type: a.content_type,
    size: a.size,
  }));

export const messageView = (m: InboxMessage) => ({
  object: 'inbox_email' as const,
  id: messageIdOf(m),
  thread_id: m.thread_id,
  direction: m.direction,
  from: m.from_header,
  to: m.to_addresses,
  cc: m.cc_addresses,
  bcc: m.bcc_addresses,
  reply_to: m.reply_to,
  subject: m.subject,
  message_id: m.message_id,
  html: m.html,
  text: m.text,
  attachments: messageAttachments(m),
  read: m.read,
  received_at: toIso(m.at),
});
export type MessageView = ReturnType<typeof messageView>;

/** What the inbox agent did about one message: the actions it asked for, each with its result. */
const agentRunView = (r: InboxAgentRun) => ({
  id: r.id,
  email_id: null as string | null,
  status: r.status,
  attempts: r.attempts,
  actions: r.actions ?? [],
  error: r.error,
  created_at: toIso(r.created_at),
  updated_at: toIso(r.updated_at),
});

/**
 * A thread: its folder, labels and read state, and from its newest message the sender and
 * recipients. `messages` are the thread's, oldest first.
 */
export function threadView(
  t: InboxThread,
  messages: InboxMessage[],
  labels: InboxLabel[],
  hasDraft: boolean,
  agentRuns: InboxAgentRun[] = [],
) {
  const newest = messages.at(-1);
  return {
    object: 'inbox_thread' as const,
    id: t.id,
    subject: t.subject,
    from: newest?.from_header ?? null,
    to: newest?.to_addresses ?? [],
    cc: newest?.cc_addresses ?? [],
    bcc: newest?.bcc_addresses ?? [],
    labels: labels.map(threadLabelView),
    email_count: messages.length,
    has_attachment: messages.some((m) => m.has_attachment),
    has_draft: hasDraft,
    read: messages.every((m) => m.read),
    received_at: toIso(t.last_message_at),
    folder: t.folder,
    /** The inbox agent's record on the thread, oldest first. */
    agent_runs: agentRuns.map((r) => {
      const m = messages.find((x) => x.id === r.message_id);
      return { ...agentRunView(r), email_id: m ? messageIdOf(m) : null };
    }),
    created_at: toIso(t.created_at),
    updated_at: toIso(t.updated_at),
  };
}
export type ThreadView = ReturnType<typeof threadView>;
