import { escapeHtml } from './render-template.js';

/**
 * What a reply and a forward carry of the message they answer, as mail clients write it: the
 * reply's attribution line and the original quoted with `> ` (text) or in a blockquote (HTML);
 * the forward's header block and the original as it was. Pure.
 */

export interface QuotedMessage {
  from: string;
  to: string[];
  cc: string[];
  subject: string | null;
  at: number;
  text: string | null;
  html: string | null;
}

const when = (ms: number): string => new Date(ms).toUTCString();

/** The text of an HTML-only message, for the text part of a reply: tags off, entities of the five escapes back. */
const roughText = (html: string): string =>
  html
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, '')
    .replace(/<br\s*\/?>|<\/p>|<\/div>/gi, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .trim();

// A message whose text part is empty (HTML-only mail often has one) is quoted from its HTML.
const originalText = (m: QuotedMessage): string => (m.text?.trim() ? m.text : m.html ? roughText(m.html) : '');
const originalHtml = (m: QuotedMessage): string =>
  m.html ?? `<pre style="white-space:pre-wrap">${escapeHtml(m.text ?? '')}</pre>`;

/** A reply's bodies: what the caller wrote, then the original quoted. A body the caller left out stays out. */
export function replyBodies(
  original: QuotedMessage,
  text: string | undefined,
  html: string | undefined,
): { text?: string; html?: string } {
  const attribution = `On ${when(original.at)}, ${original.from} wrote:`;
  const quotedText = originalText(original)
    .split(/\r?\n/)
    .map((line) => (line === '' ? '>' : `> ${line}`))
    .join('\n');
  return {
    ...(text !== undefined ? { text: `${text}\n\n${attribution}\n${quotedText}\n` } : {}),
    ...(html !== undefined
      ? {
          html: `${html}\n<div class="mailsvc-quote"><p>${escapeHtml(attribution)}</p><blockquote style="margin:0 0 0 .8ex;border-left:1px solid #ccc;padding-left:1ex">${originalHtml(original)}</blockquote></div>`,
        }
      : {}),
  };
}

/** A forward's bodies: the caller's note (if any), the header block, the original. Both parts, since the original is always there. */
export function forwardBodies(
  original: QuotedMessage,
  text: string | undefined,
  html: string | undefined,
): { text: string; html: string } {
  const header = [
    '---------- Forwarded message ---------',
    `From: ${original.from}`,
    `Date: ${when(original.at)}`,
    `Subject: ${original.subject ?? ''}`,
    `To: ${original.to.join(', ')}`,
    ...(original.cc.length > 0 ? [`Cc: ${original.cc.join(', ')}`] : []),
  ];
  const note = text ?? (html !== undefined ? roughText(html) : '');
  return {
    text: `${note ? `${note}\n\n` : ''}${header.join('\n')}\n\n${originalText(original)}\n`,
    html: `${html ?? (text !== undefined ? `<p>${escapeHtml(text).replace(/\n/g, '<br>')}</p>` : '')}\n<div class="mailsvc-forward"><p>${header.map(escapeHtml).join('<br>')}</p>${originalHtml(original)}</div>`,
  };
}

/** Subject of a reply or forward: the prefix once, not `Re: Re:`. */
export const prefixedSubject = (prefix: 'Re' | 'Fwd', subject: string | null): string => {
  const s = (subject ?? '').trim();
  const already = prefix === 'Re' ? /^re\s*:/i : /^(fwd?|fw)\s*:/i;
  return already.test(s) ? s : `${prefix}: ${s}`.trim();
};
