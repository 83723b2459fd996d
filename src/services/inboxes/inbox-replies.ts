import { parseMailboxes, type Address } from '../../messages/addresses.js';
import type { AttachmentInput } from '../../messages/attachments.js';
import { forwardBodies, prefixedSubject, replyBodies, type QuotedMessage } from '../../messages/quote-message.js';
import { PARSE_OPTIONS } from '../../receiving/routes/parse-inbound.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { parseMail } from '../../shared/parse-mail.js';
import type { Db } from '../../store/infra/db.js';
import { findEmailContent } from '../../store/emails.js';
import { findThreadMessage, type InboxMessage } from '../../store/inboxes.js';
import { findReceivedEmail, findReceivedRaw } from '../../store/receiving.js';
import type { Workspace } from '../../store/workspaces.js';
import type { ServiceDeps } from '../deps.js';
import type { RouteView } from '../receiving/routes.js';
import type { SendService } from '../send/send-email.js';
import type { SendResult } from '../send/send-input.js';
import type { InboxThreadService } from './inbox-threads.js';
import { sendFromInbox, type Caller } from './send-from-inbox.js';

/**
 * Replying to and forwarding a message of a thread: the recipients, subject, quoted text and
 * threading headers worked out from the original, then sent from the inbox (send-from-inbox.ts).
 */

type Addresses = string | string[] | undefined;

interface ReplyInput {
  text?: string | undefined;
  html?: string | undefined;
  subject?: string | undefined;
  cc?: Addresses;
  bcc?: Addresses;
  replyAll?: boolean | undefined;
  attachments?: AttachmentInput[] | undefined;
  headers?: Record<string, string> | null | undefined;
}

interface ForwardInput extends Omit<ReplyInput, 'replyAll'> {
  to: string | string[];
}

export type InTransaction = (trx: Db, result: SendResult) => Promise<void>;

export interface InboxReplyService {
  reply(
    workspace: Workspace,
    caller: Caller,
    inbox: string,
    threadId: string,
    emailId: string,
    input: ReplyInput,
    inTransaction?: InTransaction,
  ): Promise<{ id: string }>;
  forward(
    workspace: Workspace,
    caller: Caller,
    inbox: string,
    threadId: string,
    emailId: string,
    input: ForwardInput,
    inTransaction?: InTransaction,
  ): Promise<{ id: string }>;
  /** Who a reply to `original` goes to (reply_all: everyone else on it too), as reply drafts need. */
  replyRecipients(inbox: RouteView, original: InboxMessage, replyAll: boolean): { to: Address[]; cc: Address[] };
  /** The threading headers of an answer to `original`. */
  threading(original: InboxMessage): { inReplyTo: string | null; references: string[] };
  /** The original message of a thread by the API's id; 404 otherwise. */
  original(
    workspaceId: string,
    inbox: string,
    threadId: string,
    emailId: string,
  ): Promise<{ inbox: RouteView; message: InboxMessage }>;
}

const quotedOf = (m: InboxMessage): QuotedMessage => ({
  from: m.from_header,
  to: m.to_addresses,
  cc: m.cc_addresses,
  subject: m.subject,
  at: m.at,
  text: m.text,
  html: m.html,
});

export function createInboxReplyService(
  deps: ServiceDeps & { send: SendService; inboxThreads: InboxThreadService },
): InboxReplyService {
  const { db, inboxThreads } = deps;

  async function original(workspaceId: string, inboxRef: string, threadId: string, emailId: string) {
    const { inbox, thread } = await inboxThreads.findThread(workspaceId, inboxRef, threadId);
    const message = isUuid(emailId) ? await findThreadMessage(db, thread.id, emailId.toLowerCase()) : undefined;
    if (!message) throw notFound(`Email ${emailId} of thread ${threadId}`);
    return { inbox, message };
  }

  function replyRecipients(inbox: RouteView, m: InboxMessage, replyAll: boolean) {
    const own = inbox.address.toLowerCase();
    // Answering what we sent goes to its recipients again; answering what arrived, to its Reply-To or sender.
    const direct =
      m.direction === 'outbound'
        ? m.to_addresses
        : m.reply_to.length > 0
          ? m.reply_to
          : m.from_address
            ? [m.from_address]
            : [];
    const to = [...new Set(direct.map((a) => a.toLowerCase()))].filter((a) => a !== own);
    const others = replyAll
      ? [...m.to_addresses, ...m.cc_addresses].map((a) => a.toLowerCase()).filter((a) => a !== own && !to.includes(a))
      : [];
    return {
      to: to.map((address) => ({ name: '', address })),
      cc: [...new Set(others)].map((address) => ({ name: '', address })),
    };
  }

  const threading = (m: InboxMessage) => ({
    inReplyTo: m.message_id,
    references: [...m.message_references, ...(m.message_id ? [m.message_id] : [])],
  });

  /** The original's files, as attachments of the forward. */
  async function originalAttachments(m: InboxMessage): Promise<AttachmentInput[]> {
    const stored = m.attachments;
    if (stored.length === 0) return [];
    if (m.received_email_id) {
      const [received, raw] = await Promise.all([
        findReceivedEmail(db, m.workspace_id, m.received_email_id),
        findReceivedRaw(db, m.received_email_id),
      ]);
      if (!received || !raw) throw notFound('The original message');
      const positions = received.attachments;
      const parsed = await parseMail(raw, PARSE_OPTIONS);
      return stored.map((a, i) => {
        const content = parsed.attachments[positions.find((p) => p.id === a.id)?.position ?? i]?.content;
        if (!content) throw notFound(`Attachment ${a.filename ?? a.id} of the original`);
        return {
          filename: a.filename ?? `attachment-${i + 1}`,
          content: content.toString('base64'),
          contentType: a.content_type,
        };
      });
    }
    const raw = m.email_id ? await findEmailContent(db, m.email_id) : undefined;
    if (!raw) throw validationError('attachments', 'the attachments of the original message are no longer kept');
    const parsed = await parseMail(raw, PARSE_OPTIONS);
    return parsed.attachments.map((a, i) => ({
      filename: a.filename ?? stored[i]?.filename ?? `attachment-${i + 1}`,
      content: a.content.toString('base64'),
      contentType: a.contentType,
    }));
  }

  return {
    original,
    replyRecipients,
    threading,

    async reply(workspace, caller, inboxRef, threadId, emailId, input, inTransaction) {
      if (input.text === undefined && input.html === undefined) throw validationError('text', 'is required (or html)');
      const { inbox, message } = await original(workspace.id, inboxRef, threadId, emailId);
      const recipients = replyRecipients(inbox, message, input.replyAll === true);
      if (recipients.to.length === 0) throw validationError('emailId', 'the message has no one to reply to');
      const bodies = replyBodies(quotedOf(message), input.text, input.html);
      return sendFromInbox(
        deps,
        workspace,
        caller,
        {
          inbox,
          threadId: message.thread_id,
          to: recipients.to,
          cc: [...recipients.cc, ...parseMailboxes('cc', input.cc)],
          bcc: parseMailboxes('bcc', input.bcc),
          subject: input.subject ?? prefixedSubject('Re', message.subject),
          ...bodies,
          headers: input.headers,
          attachments: input.attachments ?? [],
          ...threading(message),
        },
        inTransaction,
      );
    },

    async forward(workspace, caller, inboxRef, threadId, emailId, input, inTransaction) {
      const { inbox, message } = await original(workspace.id, inboxRef, threadId, emailId);
      const to = parseMailboxes('to', input.to);
      if (to.length === 0) throw validationError('to', 'is required');
      const bodies = forwardBodies(quotedOf(message), input.text, input.html);
      const attachments = [...(await originalAttachments(message)), ...(input.attachments ?? [])];
      return sendFromInbox(
        deps,
        workspace,
        caller,
        {
          inbox,
          threadId: message.thread_id,
          to,
          cc: parseMailboxes('cc', input.cc),
          bcc: parseMailboxes('bcc', input.bcc),
          subject: input.subject ?? prefixedSubject('Fwd', message.subject),
          ...bodies,
          headers: input.headers,
          attachments,
          // A forward starts a new exchange with its recipients but names the thread, so that their answers join it.
          inReplyTo: null,
          references: threading(message).references,
        },
        inTransaction,
      );
    },
  };
}
