import { newId } from '../../shared/ids.js';
import { parseMail } from '../../shared/parse-mail.js';
import type { Db } from '../../store/infra/db.js';
import { findEmailContent, type Email } from '../../store/emails.js';
import {
  findThreadIdByMessageIds,
  findThreadIdBySubject,
  saveInboxMessage,
  saveThread,
  touchThread,
  type InboxFolder,
} from '../../store/inboxes.js';
import { formatMailbox, PARSE_OPTIONS } from './parse-inbound.js';
import { threadCandidates } from './threading.js';
import { lazyImport } from '../../shared/lazy-import.js';

const htmlToText = lazyImport(() => import('html-to-text'));

/**
 * Filing a message of an inbox (received, or sent from it) in its conversation. The headers
 * decide: a thread of the inbox holding a Message-ID that the message's In-Reply-To or
 * References name. Only a message with neither header falls back to its subject (without
 * reply and forward prefixes) and a participant in common, within SUBJECT_WINDOW_MS.
 */

const SUBJECT_WINDOW_MS = 30 * 24 * 3600 * 1000;
/** Characters of a body the search index reads. */
const SEARCH_CHARS = 100_000;

/** The body as search reads it: the text part, else the text of the HTML (links and images left out). */
async function searchText(text: string | null, html: string | null): Promise<string | null> {
  const body = text?.trim()
    ? text
    : html
      ? (await htmlToText()).convert(html, {
          wordwrap: false,
          selectors: [
            { selector: 'a', options: { ignoreHref: true } },
            { selector: 'img', format: 'skip' },
          ],
        })
      : null;
  return body === null ? null : body.slice(0, SEARCH_CHARS);
}

// Re:, Fwd:, Fw:, and the prefixes of other languages' clients (Aw:, Sv:, Vs:, Antw:, Wg:, Tr:), repeated or counted (Re[2]:).
const PREFIX = /^\s*(?:re|fwd?|aw|sv|vs|antw|wg|tr|r)(?:\s*\[\d+\])?\s*:\s*/i;

/** The subject as threading compares it: prefixes off, spaces collapsed, lower case. Pure. */
export function subjectKey(subject: string | null): string {
  let s = subject ?? '';
  for (let previous = ''; previous !== s;) {
    previous = s;
    s = s.replace(PREFIX, '');
  }
  return s.replace(/\s+/g, ' ').trim().toLowerCase();
}

export interface InboxMessageInput {
  workspaceId: string;
  inboxId: string;
  direction: 'inbound' | 'outbound';
  receivedEmailId?: string | null;
  emailId?: string | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  fromHeader: string;
  fromAddress: string | null;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  subject: string | null;
  text: string | null;
  html: string | null;
  attachments: Array<{ id: string; filename: string | null; content_type: string; size: number }>;
  at: number;
  /** The thread it belongs in when the caller knows (a reply sent from it). */
  threadId?: string | undefined;
}

/** Writes the message into its thread (a new one when none is found); returns both ids. Call in the caller's transaction. */
export async function fileInThread(db: Db, m: InboxMessageInput): Promise<{ threadId: string; messageId: string }> {
  const inbound = m.direction === 'inbound';
  const key = subjectKey(m.subject);
  let threadId =
    m.threadId ?? (await findThreadIdByMessageIds(db, m.inboxId, threadCandidates(m.inReplyTo, m.references)));
  const other = inbound ? m.fromAddress : m.to[0];
  if (!threadId && !m.inReplyTo && m.references.length === 0 && key !== '' && other) {
    threadId = await findThreadIdBySubject(db, m.inboxId, key, other, m.at - SUBJECT_WINDOW_MS);
  }
  if (threadId) {
    // A reply brings an archived conversation, or one we started, back to the inbox; spam and trash stay where they are.
    const folder: InboxFolder | undefined = inbound ? 'inbox' : undefined;
    await touchThread(db, threadId, m.at, folder, inbound ? ['archive', 'sent'] : []);
  } else {
    threadId = newId();
    await saveThread(db, {
      id: threadId,
      workspace_id: m.workspaceId,
      inbox_id: m.inboxId,
      subject: m.subject,
      subject_key: key,
      folder: inbound ? 'inbox' : 'sent',
      last_message_at: m.at,
      created_at: m.at,
      updated_at: m.at,
    });
  }
  const references = [...m.references, ...(m.inReplyTo && !m.references.includes(m.inReplyTo) ? [m.inReplyTo] : [])];
  const messageId = newId();
  await saveInboxMessage(db, {
    id: messageId,
    workspace_id: m.workspaceId,
    inbox_id: m.inboxId,
    thread_id: threadId,
    direction: m.direction,
    received_email_id: m.receivedEmailId ?? null,
    email_id: m.emailId ?? null,
    message_id: m.messageId,
    message_references: references,
    from_header: m.fromHeader,
    from_address: m.fromAddress,
    to_addresses: m.to,
    cc_addresses: m.cc,
    bcc_addresses: m.bcc,
    reply_to: m.replyTo,
    participants: [
      ...new Set(
        [m.fromAddress, ...m.to, ...m.cc, ...m.bcc, ...m.replyTo]
          .filter((a): a is string => Boolean(a))
          .map((a) => a.toLowerCase()),
      ),
    ].join(' '),
    subject: m.subject,
    text: m.text,
    html: m.html,
    search_text: await searchText(m.text, m.html),
    attachments: m.attachments.map((a) => ({
      id: a.id,
      filename: a.filename,
      content_type: a.content_type,
      size: a.size,
    })),
    has_attachment: m.attachments.length > 0,
    // What we send is read; what arrives is not, until someone reads it.
    read: !inbound,
    at: m.at,
    created_at: m.at,
  });
  return { threadId, messageId };
}

/**
 * An email sent from the inbox's address by any intake (`POST /v1/emails`, SMTP), as the first
 * message of the thread that a reply to it starts; undefined when it is not from this inbox or
 * is filed already. Read before the transaction that files the reply: its content is parsed.
 */
export async function sentEmailToFile(
  db: Db,
  inbox: { id: string; address: string },
  email: Email | undefined,
): Promise<InboxMessageInput | undefined> {
  if (!email || email.from_address.toLowerCase() !== inbox.address.toLowerCase()) return undefined;
  if (await findThreadIdByMessageIds(db, inbox.id, [email.message_id])) return undefined;
  const raw = await findEmailContent(db, email.id);
  // A campaign's messages are composed when delivered: their content may not be kept.
  const parsed = raw ? await parseMail(raw, PARSE_OPTIONS) : undefined;
  const refs = parsed?.references;
  const author = parsed?.from?.value[0];
  return {
    workspaceId: email.workspace_id,
    inboxId: inbox.id,
    direction: 'outbound',
    emailId: email.id,
    messageId: email.message_id,
    inReplyTo: parsed?.inReplyTo ?? null,
    references: Array.isArray(refs) ? refs : refs ? [refs] : [],
    // As received messages show theirs: `Name <address>`, quoted only where it must be.
    fromHeader: author?.address ? formatMailbox(author.name ?? '', author.address) : email.from_header,
    fromAddress: email.from_address,
    to: email.to_addresses,
    cc: email.cc_addresses ?? [],
    bcc: email.bcc_addresses ?? [],
    replyTo: email.reply_to ?? [],
    subject: email.subject,
    text: parsed?.text ?? null,
    html: typeof parsed?.html === 'string' ? parsed.html : null,
    attachments: (parsed?.attachments ?? []).map((a) => ({
      id: newId(),
      filename: a.filename ?? null,
      content_type: a.contentType,
      size: a.size,
    })),
    at: email.created_at,
  };
}
