import { compile } from 'html-to-text';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Address } from './addresses.js';
import type { Attachment } from './attachments.js';

export interface ComposeInput {
  from: Address;
  to: Address[];
  cc: Address[];
  replyTo: Address[];
  subject: string;
  html?: string | undefined;
  text?: string | undefined;
  headers: Record<string, string>;
  attachments: Attachment[];
  /** With angle brackets. */
  messageId: string;
  date: Date;
}

// Compiled once: compiling the converter's selectors costs more than converting a message.
const htmlToText = compile({ wordwrap: 78, selectors: [{ selector: 'img', format: 'skip' }] });

/** Plain text for clients that do not render HTML, derived from the HTML when none is given. */
export const textFromHtml = (html: string): string => htmlToText(html);

/**
 * Composes the RFC 5322 message with nodemailer: RFC 2047 encoding of non-ASCII names and
 * subjects, MIME structure, transfer encodings. Bcc recipients are never written into it.
 */
export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const text = input.text ?? (input.html !== undefined ? textFromHtml(input.html) : undefined);
  const composer = new MailComposer({
    from: input.from,
    to: input.to,
    cc: input.cc.length > 0 ? input.cc : undefined,
    replyTo: input.replyTo.length > 0 ? input.replyTo : undefined,
    subject: input.subject,
    html: input.html,
    text,
    headers: input.headers,
    messageId: input.messageId,
    date: input.date,
    attachments: input.attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType,
      ...(a.cid ? { cid: a.cid, contentDisposition: 'inline' as const } : {}),
    })),
    // Our own Message-ID and Date; no X-Mailer advertising the library.
    xMailer: false,
  });
  return composer.compile().build();
}
