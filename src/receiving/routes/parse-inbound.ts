import libmime from 'libmime';
import type { AddressObject, Attachment, EmailAddress, ParsedMail } from 'mailparser';
import { parseMail } from '../../shared/parse-mail.js';

/**
 * A received message as the API and the `email.received` event show it, parsed by mailparser.
 * Bodies are kept as received: no HTML to text (or back), no rewriting of `cid:` links.
 */

interface InboundAttachment {
  /** Position among the message's attachments, as mailparser finds them: how the bytes are found again. */
  position: number;
  filename: string | null;
  contentType: string;
  /** `attachment` or `inline`. */
  disposition: 'attachment' | 'inline';
  /** Without angle brackets. */
  contentId: string | null;
  size: number;
  /** SHA-256 of the decoded bytes, hex. */
  sha256: string;
}

export interface ParsedInbound {
  /** `Name <address>` or the bare address; empty when the message has no From. */
  from: string;
  fromAddress: string | null;
  to: string[];
  cc: string[];
  replyTo: string[];
  subject: string;
  date: number | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  text: string | null;
  html: string | null;
  /** Every header in message order, unfolded, encoded-words decoded. */
  headers: Array<[string, string]>;
  attachments: InboundAttachment[];
}

export const PARSE_OPTIONS = {
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipImageLinks: true,
  skipTextLinks: true,
  keepCidLinks: true,
  checksumAlgo: 'sha256',
} as const;

// Display names come from anyone: no control characters reach a header-like string.
const CONTROL = /[\u0000-\u001f\u007f\u2028\u2029]/g;

const mailboxes = (value: AddressObject | AddressObject[] | undefined): EmailAddress[] =>
  (Array.isArray(value) ? value : value ? [value] : [])
    .flatMap((o) => o.value)
    .flatMap((a) => (a.group ? a.group : [a]));

const addresses = (value: AddressObject | AddressObject[] | undefined): string[] =>
  mailboxes(value)
    .map((a) => a.address?.trim())
    .filter((a): a is string => Boolean(a));

/** `Ann Example <ann@example.com>`, quoting the name when it holds characters that would change its meaning. */
export function formatMailbox(name: string, address: string): string {
  const clean = name.replace(CONTROL, ' ').trim();
  if (!clean) return address;
  return /[()<>[\]:;@\\,."]/.test(clean)
    ? `"${clean.replace(/["\\]/g, '\\$&')}" <${address}>`
    : `${clean} <${address}>`;
}

const messageIds = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value : value ? [value] : []).flatMap((v) => v.match(/<[^<>\s]+>/g) ?? []);

const headerLines = (mail: ParsedMail): Array<[string, string]> =>
  mail.headerLines.map(({ line }) => {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : line.trim();
    const value =
      colon > 0
        ? line
            .slice(colon + 1)
            .replace(/\r?\n[ \t]+/g, ' ')
            .trim()
        : '';
    let decoded = value;
    try {
      decoded = libmime.decodeWords(value);
    } catch {
      // An encoded-word in an unknown charset: keep it as written.
    }
    return [name, decoded];
  });

const attachmentOf = (a: Attachment, position: number): InboundAttachment => ({
  position,
  filename: a.filename ?? null,
  contentType: a.contentType.toLowerCase(),
  disposition: a.contentDisposition?.toLowerCase() === 'inline' ? 'inline' : 'attachment',
  contentId: a.contentId ? a.contentId.replace(/^<|>$/g, '') : null,
  size: a.size ?? a.content.length,
  sha256: a.checksum,
});

/** Parses a raw message; the attachments' bytes are left in the raw message (see `readAttachment`). */
export async function parseInbound(raw: Buffer): Promise<ParsedInbound> {
  const mail = await parseMail(raw, PARSE_OPTIONS);
  const from = mailboxes(mail.from).find((a) => a.address);
  const inReplyTo = messageIds(mail.inReplyTo)[0] ?? null;
  return {
    from: from?.address ? formatMailbox(from.name, from.address) : '',
    fromAddress: from?.address ?? null,
    to: addresses(mail.to),
    cc: addresses(mail.cc),
    replyTo: addresses(mail.replyTo),
    subject: (mail.subject ?? '').replace(CONTROL, ' '),
    date: mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date.getTime() : null,
    messageId: messageIds(mail.messageId)[0] ?? null,
    inReplyTo,
    references: messageIds(mail.references),
    text: typeof mail.text === 'string' ? mail.text : null,
    html: typeof mail.html === 'string' ? mail.html : null,
    headers: headerLines(mail),
    attachments: mail.attachments.map(attachmentOf),
  };
}

/** The decoded bytes of one attachment, found again by its position; undefined when the message has no such attachment. */
export async function readAttachment(raw: Buffer, position: number): Promise<Buffer | undefined> {
  const mail = await parseMail(raw, PARSE_OPTIONS);
  return mail.attachments[position]?.content;
}
