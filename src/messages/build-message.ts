import { addTracking } from './add-tracking.js';
import type { Composer, ComposeInput } from './compose.js';
import { escapeHtml } from './render-template.js';
import { listUnsubscribeHeaders, type MessageLinks, type TrackingFlags } from './links.js';

/** A message as its sender's data makes it, before the links and MIME every message gets. */
interface MessageParts extends Omit<ComposeInput, 'headers'> {
  /** The email's id: what its tracking links name. */
  emailId: string;
  headers: Record<string, string>;
  track: TrackingFlags;
  /** Marketing mail: its recipient's one-click unsubscribe URL (RFC 8058); null for transactional. */
  unsubscribeUrl: string | null;
  /** The preheader shown beside the subject in inboxes. */
  previewText?: string | null | undefined;
}

/**
 * The one composer: every message, whether a request sends it (composed as it is accepted) or
 * a campaign's (composed when first delivered), gets its List-Unsubscribe headers, preheader
 * and tracking here, and its MIME from nodemailer (compose.ts).
 */
export async function buildMessage(
  parts: MessageParts,
  deps: { compose: Composer; links: MessageLinks },
): Promise<Buffer> {
  const headers = { ...parts.headers };
  if (parts.unsubscribeUrl && !Object.keys(headers).some((h) => h.toLowerCase() === 'list-unsubscribe'))
    Object.assign(headers, listUnsubscribeHeaders(parts.unsubscribeUrl));
  let html = parts.html === undefined ? undefined : withPreheader(parts.html, parts.previewText ?? null);
  if (html !== undefined && (parts.track.opens || parts.track.clicks))
    html = addTracking(html, deps.links.tracking(parts.emailId, parts.track));
  return deps.compose({
    from: parts.from,
    to: parts.to,
    cc: parts.cc,
    replyTo: parts.replyTo,
    subject: parts.subject,
    html,
    text: parts.text,
    headers,
    attachments: parts.attachments,
    messageId: parts.messageId,
    date: parts.date,
  });
}

/** A hidden preheader at the start of the body: inboxes show it beside the subject. */
function withPreheader(html: string, previewText: string | null): string {
  if (!previewText) return html;
  const hidden = `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(previewText)}</div>`;
  const body = /<body\b[^>]*>/i.exec(html);
  return body
    ? html.slice(0, body.index + body[0].length) + hidden + html.slice(body.index + body[0].length)
    : hidden + html;
}
