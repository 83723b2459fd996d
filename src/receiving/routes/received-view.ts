import { toIso, toIsoOrNull } from '../../shared/clock.js';
import type { ReceivedEmail, ReceivedEmailBody, StoredAttachment } from '../../store/receiving.js';
import type { Email } from '../../store/emails.js';
import { authenticationOf } from './authenticate-message.js';
import type { ReceivedLinks } from './received-links.js';

/**
 * How a received message is shown: by `GET /v1/emails/receiving/{id}` (Resend's shape, with
 * our fields beside it) and, the same fields, in the `email.received` event. Pure.
 */

/** What the sent email a reply answers belonged to. */
interface RepliedEmailView {
  id: string;
  subject: string;
  to: string[];
  campaign_id: string | null;
  subscriber_id: string | null;
  tags: string[];
  metadata: Record<string, unknown> | null;
  external_id: string | null;
  created_at: string;
}

export interface ViewContext {
  /** The signed, expiring download links of a message's parts. */
  links: ReceivedLinks;
}

const repliedEmailView = (e: Email): RepliedEmailView => ({
  id: e.id,
  subject: e.subject,
  to: e.to_addresses,
  campaign_id: e.campaign_id,
  subscriber_id: e.subscriber_id,
  tags: e.tags ?? [],
  metadata: e.metadata,
  external_id: e.external_id,
  created_at: toIso(e.created_at),
});

/** Headers as one object, names lower-cased; a repeated header keeps its first (most recent) value. */
export function headerObject(headers: Array<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    if (!(key in out)) out[key] = value;
  }
  return out;
}

const link = (ctx: ViewContext, e: ReceivedEmail, part: string) =>
  ctx.links.link(e.workspace_id, e.id, e.created_at, part);

/** Resend's AttachmentData: the description and a signed link to the bytes (no API key needed). */
export const attachmentView = (ctx: ViewContext, e: ReceivedEmail, a: StoredAttachment) => ({
  id: a.id,
  filename: a.filename,
  size: a.size,
  content_type: a.content_type,
  content_disposition: a.content_disposition,
  content_id: a.content_id,
  ...link(ctx, e, a.id),
});

export function receivedSummary(ctx: ViewContext, e: ReceivedEmail, replied: Email | undefined) {
  const { to_addresses: to, cc_addresses: cc, recipients: receivedFor } = e;
  const visible = new Set([...to, ...cc].map((a) => a.toLowerCase()));
  return {
    id: e.id,
    created_at: toIso(e.created_at),
    from: e.from_header,
    to,
    cc,
    // Recipients of ours the headers do not name were blind-copied.
    bcc: receivedFor.filter((a) => !visible.has(a.toLowerCase())),
    reply_to: e.reply_to,
    received_for: receivedFor,
    subject: e.subject,
    date: toIsoOrNull(e.sent_at),
    message_id: e.message_id,
    in_reply_to: e.in_reply_to,
    references: e.message_references,
    size: e.size,
    attachments: e.attachments.map((a) => attachmentView(ctx, e, a)),
    envelope: {
      mail_from: e.envelope_from,
      rcpt_to: receivedFor,
      remote_address: e.remote_address,
      helo: e.helo,
      tls: e.tls,
    },
    authentication: authenticationOf(e),
    route_ids: e.route_ids,
    in_reply_to_email_id: e.in_reply_to_email_id,
    in_reply_to_email: replied ? repliedEmailView(replied) : null,
  };
}

export function receivedDetail(
  ctx: ViewContext,
  e: ReceivedEmail,
  content: ReceivedEmailBody | undefined,
  replied: Email | undefined,
) {
  return {
    object: 'email' as const,
    ...receivedSummary(ctx, e, replied),
    html: content?.html ?? null,
    text: content?.text ?? null,
    headers: content ? headerObject(content.headers) : null,
    raw: content ? { ...link(ctx, e, 'raw'), size: e.size } : null,
  };
}

/** The `email.received` event's data: every field of the detail, named as Resend's event names the id. */
export function receivedEventData(
  ctx: ViewContext,
  e: ReceivedEmail,
  content: ReceivedEmailBody,
  replied: Email | undefined,
): Record<string, unknown> {
  const { object: _object, id, ...rest } = receivedDetail(ctx, e, content, replied);
  return { email_id: id, ...rest };
}
