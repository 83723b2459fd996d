/**
 * Open and click tracking in an HTML body: http(s) links in `<a href>` are replaced by signed
 * redirect links, and a 1×1 pixel goes before `</body>`. Pure; the links come from the caller.
 */
export interface TrackingLinks {
  /** The pixel's URL, or null when opens are not tracked. */
  openUrl: string | null;
  /** The tracked URL for a link, or null to leave the link as it is (clicks off, URL too long). */
  clickUrl: ((url: string) => string | null) | null;
}

const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };

/** The URL a browser would follow: character references in the attribute decoded. */
const decodeAttribute = (value: string): string =>
  value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[ref.toLowerCase()] ?? whole;
  });

// `<a … href="…"` / `href='…'`; the tag's other attributes (before and after) are kept.
const LINK_RE = /(<a\b[^>]*?\shref\s*=\s*)(["'])(.*?)\2/gis;

export function addTracking(html: string, links: TrackingLinks): string {
  let out = html;
  const { clickUrl, openUrl } = links;
  if (clickUrl) {
    out = out.replace(LINK_RE, (whole, before: string, quote: string, value: string) => {
      const url = decodeAttribute(value.trim());
      if (!/^https?:\/\/[^\s]+$/i.test(url)) return whole; // mailto:, tel:, #anchors, templates
      const tracked = clickUrl(url);
      return tracked === null ? whole : `${before}${quote}${tracked}${quote}`;
    });
  }
  if (openUrl) {
    const pixel = `<img src="${openUrl}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />`;
    const end = out.search(/<\/body\s*>(?![\s\S]*<\/body\s*>)/i);
    out = end >= 0 ? `${out.slice(0, end)}${pixel}${out.slice(end)}` : `${out}${pixel}`;
  }
  return out;
}
