import type { Generated } from 'kysely';

/** Inboxes as mail clients see them: threads, messages, labels, drafts, the agent and its runs. */

/** Where a thread of an inbox is filed (Resend's folders); `sent` holds threads we started. */
export const INBOX_FOLDERS = ['inbox', 'archive', 'spam', 'sent', 'trash'] as const;
export type InboxFolder = (typeof INBOX_FOLDERS)[number];

export interface InboxThreadsTable {
  id: string;
  workspace_id: string;
  /** The inbox: a receiving route for one address. */
  inbox_id: string;
  subject: string | null;
  /** The subject without reply and forward prefixes, lower case: the fallback of threading. */
  subject_key: string;
  folder: InboxFolder;
  last_message_at: number;
  created_at: number;
  updated_at: number;
}

export interface InboxMessagesTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  thread_id: string;
  direction: 'inbound' | 'outbound';
  received_email_id: string | null;
  email_id: string | null;
  /** With angle brackets. */
  message_id: string | null;
  /** JSON array: In-Reply-To and References, oldest first. */
  message_references: string;
  from_header: string;
  from_address: string | null;
  /** JSON arrays of addresses. */
  to_addresses: string;
  cc_addresses: string;
  bcc_addresses: string;
  reply_to: string;
  /** Every address of the message, space separated: what search matches participants in. */
  participants: string;
  subject: string | null;
  text: string | null;
  html: string | null;
  /** What search reads of the body: the text part, else the HTML's text. */
  search_text: string | null;
  /** JSON array of { id, filename, content_type, size }. */
  attachments: string;
  has_attachment: number;
  read: number;
  /** When it was received or sent. */
  at: number;
  created_at: number;
}

export interface InboxLabelsTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  name: string;
  /** #RRGGBB. */
  color: string;
  created_at: number;
}

export interface InboxThreadLabelsTable {
  thread_id: string;
  label_id: string;
  created_at: number;
}

export interface InboxDraftsTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  /** A reply draft's thread and the message it answers; null for a standalone draft. */
  thread_id: string | null;
  reply_to_message_id: string | null;
  /** JSON arrays; `to` is null until set. */
  to_addresses: string | null;
  cc_addresses: string;
  bcc_addresses: string;
  subject: string | null;
  text: string | null;
  html: string | null;
  /** The email it became once sent. */
  email_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface InboxDraftAttachmentsTable {
  id: string;
  draft_id: string;
  position: number;
  filename: string;
  content_type: string;
  size: number;
  content: Buffer;
}

/** pending: waiting for the agent (again, after a failed try); running: with the agent now; done; failed: tries ran out. */
export type InboxAgentRunStatus = 'pending' | 'running' | 'done' | 'failed';

export interface InboxAgentRunsTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  thread_id: string;
  /** The inbox message that started it. */
  message_id: string;
  status: InboxAgentRunStatus;
  attempts: number;
  next_attempt_at: number;
  started_at: number | null;
  /** JSON array of { type, …, result }: what the agent asked for and what became of it. */
  actions: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  lease_owner: Generated<string | null>;
  lease_until: Generated<number | null>;
}

export interface InboxAgentsTable {
  inbox_id: string;
  workspace_id: string;
  instructions: string | null;
  tone: string | null;
  /** JSON array of action names. */
  actions: string;
  /** JSON array of addresses and "@domain" entries the agent may forward to, besides the workspace's verified domains. */
  forward_to: string;
  updated_at: number;
}
