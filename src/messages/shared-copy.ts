import { TRACKING_PATHS, type MessageLinks } from './links.js';

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The HTML of a sent message as a shared copy shows it (emails.share): whoever opens the link
 * is not the recipient, so the open pixel is dropped, tracked links point straight at their
 * destination (no click is recorded), and the recipient's one-click unsubscribe link goes
 * nowhere. Only our own URLs are touched; they were written by us, in attribute values.
 */
export function sharedCopyHtml(html: string, publicUrl: string, links: MessageLinks): string {
  const base = escapeRe(publicUrl);
  const open = new RegExp(`<img\\b[^>]*\\bsrc=(["'])${base}${escapeRe(TRACKING_PATHS.open)}[^"']*\\1[^>]*>`, 'gi');
  const click = new RegExp(`${base}${escapeRe(TRACKING_PATHS.click)}([A-Za-z0-9_.-]+)`, 'g');
  const unsubscribe = new RegExp(`${base}/u/[A-Za-z0-9_.-]+`, 'g');
  return html
    .replace(open, '')
    .replace(click, (whole, token: string) => {
      const url = links.readClick(token)?.url;
      return url === undefined ? '#' : url.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
    })
    .replace(unsubscribe, '#');
}
