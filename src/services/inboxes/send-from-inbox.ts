import { formatMailbox } from '../../receiving/routes/parse-inbound.js';
import { fileInThread } from '../../receiving/routes/file-in-thread.js';
import { validationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Address } from '../../messages/addresses.js';
import { contentTypeOf, type AttachmentInput } from '../../messages/attachments.js';
import type { Db } from '../../store/infra/db.js';
import type { Workspace } from '../../store/workspaces.js';
import type { RouteView } from '../receiving/routes.js';
import type { SendService } from '../send/send-email.js';
import type { SendResult } from '../send/send-input.js';

/**
 * The one way mail leaves an inbox (replies, forwards, drafts): from the inbox's address
 * through the send service like any other message (suppression, limits, DKIM, events, the
 * queue), filed in its thread, as sent, in the transaction that queues it.
 */

/** Threading headers are the inbox's to write (as Resend: setting one is refused). */
const THREADING_HEADERS = new Set(['in-reply-to', 'references', 'reply-to']);
/** References kept, from the end: the nearest messages of a long thread. */
const MAX_REFERENCES = 20;

export interface Caller {
  test: boolean;
  senderDomainId: string | null;
}

interface OutgoingMessage {
  inbox: RouteView;
  /** The thread it joins; none: the headers decide (a standalone message starts one). */
  threadId?: string | undefined;
  to: Address[];
  cc: Address[];
  bcc: Address[];
  subject: string;
  text?: string | undefined;
  html?: string | undefined;
  headers?: Record<string, string> | null | undefined;
  attachments: AttachmentInput[];
  inReplyTo: string | null;
  /** The thread's Message-IDs, oldest first. */
  references: string[];
}

/** Refuses the headers a caller may not set here; the send service checks the rest. */
export function checkCallerHeaders(headers: Record<string, string> | null | undefined): Record<string, string> {
  for (const name of Object.keys(headers ?? {})) {
    if (THREADING_HEADERS.has(name.toLowerCase()))
      throw validationError(`headers.${name}`, 'In-Reply-To, References and Reply-To are set by the inbox');
  }
  return headers ?? {};
}

/** PostgreSQL refuses NUL in text, and no mail client writes one: refused before anything is sent. */
export function checkNoNul(fields: Record<string, string | null | undefined>): void {
  for (const [field, value] of Object.entries(fields))
    if (value?.includes('\u0000')) throw validationError(field, 'must not contain NUL characters');
}

/** Size of base64 content without decoding it. */
const decodedSize = (base64: string | undefined): number => {
  if (base64 === undefined) return 0;
  const compact = base64.replace(/\s/g, '');
  return Math.floor((compact.length * 3) / 4) - (compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0);
};

export async function sendFromInbox(
  deps: { send: SendService; clock: { now(): number } },
  workspace: Workspace,
  caller: Caller,
  m: OutgoingMessage,
  inTransaction?: (trx: Db, result: SendResult) => Promise<void>,
): Promise<{ id: string }> {
  const userHeaders = checkCallerHeaders(m.headers);
  checkNoNul({ subject: m.subject, text: m.text, html: m.html });
  const references = [...new Set(m.references)].slice(-MAX_REFERENCES);
  const from: Address = { name: m.inbox.from_name ?? '', address: m.inbox.address };
  const outcome = await deps.send.send(
    workspace,
    {
      intake: 'v1',
      test: caller.test,
      senderDomainId: caller.senderDomainId,
      from,
      to: m.to,
      cc: m.cc,
      bcc: m.bcc,
      subject: m.subject,
      text: m.text,
      html: m.html,
      headers: {
        ...userHeaders,
        ...(m.inReplyTo ? { 'In-Reply-To': m.inReplyTo } : {}),
        ...(references.length > 0 ? { References: references.join(' ') } : {}),
      },
      attachments: m.attachments,
      type: 'transactional',
    },
    {
      inTransaction: async (trx, results) => {
        const result = results[0]!;
        await fileInThread(trx, {
          workspaceId: workspace.id,
          inboxId: m.inbox.id,
          direction: 'outbound',
          emailId: result.id,
          // The send service's Message-ID: the email's id on the sending domain (send-email.ts); this
          // runs before the email's row is written, so it cannot be read back.
          messageId: `<${result.id}@${m.inbox.domain}>`,
          inReplyTo: m.inReplyTo,
          references,
          fromHeader: formatMailbox(from.name, from.address),
          fromAddress: from.address,
          to: m.to.map((a) => a.address),
          cc: m.cc.map((a) => a.address),
          bcc: m.bcc.map((a) => a.address),
          replyTo: [],
          subject: m.subject,
          text: m.text ?? null,
          html: m.html ?? null,
          attachments: m.attachments.map((a) => ({
            id: newId(),
            filename: a.filename,
            content_type: a.contentType ?? contentTypeOf(a.filename),
            size: decodedSize(a.content),
          })),
          at: deps.clock.now(),
          threadId: m.threadId,
        });
        await inTransaction?.(trx, result);
      },
    },
  );
  return { id: outcome.results[0]!.id };
}
