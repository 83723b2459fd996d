import type { DefaultTreeAdapterMap } from 'parse5';
import type { Root } from 'postcss';
import { lazyImport } from '../shared/lazy-import.js';
import type { ClientSupportData, ClientSupportFeature } from './client-support.js';
import { variableNames } from './render-template.js';

/**
 * What would break a template in the mail clients people use, found in its HTML before it is
 * sent: elements, CSS properties and at-rules that clients lack (caniemail.com's data), the
 * size past which Gmail clips a message, images without alt text, links that are not https,
 * a marketing template without an unsubscribe link, variables used but not declared. Pure (the parsers are imported on first use):
 * the HTML in, findings out, each with where, which clients and what to do instead.
 */

type FindingKind =
  'client_support' | 'gmail_clipping' | 'image_alt' | 'insecure_link' | 'unsubscribe_link' | 'undeclared_variable';
type Severity = 'error' | 'warning' | 'info';

export interface Finding {
  kind: FindingKind;
  severity: Severity;
  message: string;
  /** Lines of the compiled HTML (1-based) it points at; empty when it is about the whole. */
  lines: number[];
  /** The clients it affects, by name, with how (not supported, partly). */
  clients: Array<{ client: string; support: 'not supported' | 'partly supported' | 'unknown'; note?: string }>;
  suggestion: string;
  /** caniemail.com's page of the feature. */
  url?: string;
}

/** Gmail clips a message whose HTML is larger than this, hiding the rest behind "View entire message". */
const GMAIL_CLIP_BYTES = 102 * 1024;

/** Variables every campaign and send knows without declaring them (messages/campaign-message.ts). */
const BUILT_IN_VARIABLES = new Set([
  'email',
  'first_name',
  'last_name',
  'external_id',
  'metadata',
  'contact',
  'unsubscribe_url',
  'FIRST_NAME',
  'LAST_NAME',
  'EMAIL',
  'RESEND_UNSUBSCRIBE_URL',
]);

/** What to do instead, for the features templates most often trip on; others get the general advice. */
const SUGGESTIONS: Record<string, string> = {
  'css-display-flex':
    "Lay out with tables (MJML's mj-section and mj-column do): clients that ignore flex stack the items.",
  'css-display-grid':
    "Lay out with tables (MJML's mj-section and mj-column do): clients that ignore grid stack the items.",
  'css-position':
    'Do not position elements: clients that ignore it show them in the flow, often over other content. Use tables.',
  'css-background-image': 'Give a background-color too, and keep text readable without the image.',
  'css-at-font-face': 'Name a web-safe font after the web font in font-family: clients without @font-face use it.',
  'css-at-import': 'Put the CSS in a <style> element or inline it: @import is dropped.',
  'css-float': 'Use table cells side by side instead of floats.',
  'html-svg': 'Use a PNG or JPEG image instead of SVG.',
  'html-video': 'Link a still image (or an animated GIF) to the video on a web page.',
  'html-form': 'Link to a form on a web page instead.',
  'css-pseudo-class-hover': 'Treat hover effects as a bonus: the design must work without them.',
};

const LEVELS = { n: 'not supported', a: 'partly supported', u: 'unknown' } as const;

/** Clients whose lack of support makes a finding a warning rather than a note: where most mail is read. */
const MAJOR = /^(gmail|outlook\.windows|outlook\.outlook-com|apple-mail)/;

type Node = DefaultTreeAdapterMap['node'];

interface CheckInput {
  html: string;
  subject?: string | null | undefined;
  text?: string | null | undefined;
  /** Declared variable keys. */
  declared: string[];
  /** Marketing mail must carry an unsubscribe link. */
  marketing: boolean;
}

const parsers = lazyImport(async () => ({
  parse: (await import('parse5')).parse,
  postcss: (await import('postcss')).default,
}));

export async function checkTemplate(input: CheckInput, data: ClientSupportData): Promise<Finding[]> {
  const { parse, postcss } = await parsers();
  const findings: Finding[] = [];
  const used = new Map<string, { feature: ClientSupportFeature; lines: Set<number> }>();
  const use = (slug: string, line: number) => {
    const feature = data.features.get(slug);
    if (!feature) return false;
    const entry = used.get(slug) ?? { feature, lines: new Set<number>() };
    entry.lines.add(line);
    used.set(slug, entry);
    return true;
  };

  const cssAt = (css: string, firstLine: number, wrap: boolean) => {
    let root: Root;
    try {
      root = postcss.parse(wrap ? `x{${css}}` : css);
    } catch {
      return; // CSS that does not parse is ignored by clients too; nothing to attribute.
    }
    root.walkDecls((decl) => {
      const line = firstLine + (decl.source?.start?.line ?? 1) - 1;
      const prop = decl.prop.toLowerCase();
      const keyword = decl.value.trim().toLowerCase().split(/[\s!]/)[0];
      // The value's own feature first (display:flex), then the property's (position).
      if (!use(`css-${prop}-${keyword}`, line)) use(`css-${prop}`, line);
    });
    root.walkAtRules((rule) => {
      const line = firstLine + (rule.source?.start?.line ?? 1) - 1;
      const name = rule.name.toLowerCase();
      const params = rule.params.toLowerCase();
      const specific =
        name === 'media'
          ? [...params.matchAll(/\(\s*([a-z-]+)/g)]
              .map((m) => `css-at-media-${m[1]}`)
              .find((slug) => data.features.has(slug))
          : undefined;
      if (!(specific && use(specific, line))) use(`css-at-${name}`, line);
    });
    root.walkRules((rule) => {
      const line = firstLine + (rule.source?.start?.line ?? 1) - 1;
      for (const m of rule.selector.matchAll(/:(?!:)([a-z-]+)/g)) use(`css-pseudo-class-${m[1]}`, line);
    });
  };

  const document = parse(input.html, { sourceCodeLocationInfo: true });
  const images: number[] = [];
  const insecure: number[] = [];
  let unsubscribe = false;
  const stack: Node[] = [document];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if ('childNodes' in node) stack.push(...[...node.childNodes].reverse());
    // A <template> element's children live in its content fragment.
    if ('content' in node) stack.push(node.content);
    if (!('tagName' in node)) continue;
    const el = node;
    const line = el.sourceCodeLocation?.startLine ?? 0;
    // The document skeleton is implied by the parser even when the source has none.
    if (!['html', 'head', 'body'].includes(el.tagName) || el.sourceCodeLocation) use(`html-${el.tagName}`, line);
    const attr = (name: string) => el.attrs.find((a) => a.name === name)?.value;
    const style = attr('style');
    if (style) cssAt(style, el.sourceCodeLocation?.attrs?.style?.startLine ?? line, true);
    if (el.tagName === 'style') {
      const text = el.childNodes.map((c) => ('value' in c ? c.value : '')).join('');
      const first = el.childNodes[0]?.sourceCodeLocation?.startLine ?? line;
      cssAt(text, first, false);
    }
    if (el.tagName === 'img' && attr('alt') === undefined) images.push(line);
    if (el.tagName === 'a') {
      const href = (attr('href') ?? '').trim();
      if (/^http:\/\//i.test(href)) insecure.push(line);
      if (/unsubscribe/i.test(href) || /\{\{\{?\s*(unsubscribe_url|RESEND_UNSUBSCRIBE_URL)/.test(href))
        unsubscribe = true;
    }
  }

  for (const { feature, lines } of used.values()) {
    const clients = Object.entries(feature.support)
      .filter(([client]) => client in data.clients)
      .map(([client, s]) => ({
        client: data.clients[client]!,
        support: LEVELS[s.level] ?? 'unknown',
        ...(s.note ? { note: s.note } : {}),
        key: client,
        level: s.level,
      }));
    if (clients.length === 0) continue;
    const severity: Severity = clients.some((c) => c.level === 'n' && MAJOR.test(c.key)) ? 'warning' : 'info';
    const lacking = clients.filter((c) => c.level === 'n').map((c) => c.client);
    findings.push({
      kind: 'client_support',
      severity,
      message: `${feature.title}: ${lacking.length ? `not supported by ${lacking.join(', ')}` : 'only partly supported by some clients'}`,
      lines: [...lines].sort((a, b) => a - b),
      clients: clients.map(({ key: _k, level: _l, ...c }) => c),
      suggestion:
        SUGGESTIONS[feature.slug] ??
        `Check the clients listed: they ignore or mangle ${feature.title}. Give a fallback, or do without it.`,
      url: feature.url,
    });
  }

  const bytes = Buffer.byteLength(input.html, 'utf8');
  if (bytes > GMAIL_CLIP_BYTES) {
    findings.push({
      kind: 'gmail_clipping',
      severity: 'warning',
      message: `The HTML is ${Math.ceil(bytes / 1024)} KB: Gmail clips messages over 102 KB and hides the rest (the unsubscribe link and the open pixel with it)`,
      lines: [],
      clients: [{ client: 'Gmail', support: 'partly supported' }],
      suggestion: 'Shorten the content, remove unused CSS, or link to the full version on the web.',
    });
  }
  if (images.length > 0) {
    findings.push({
      kind: 'image_alt',
      severity: 'warning',
      message: `${images.length} image${images.length > 1 ? 's have' : ' has'} no alt text: clients that block images (Outlook by default) and screen readers show nothing`,
      lines: images,
      clients: [],
      suggestion: 'Give every image an alt attribute: what it says, or alt="" for decoration.',
    });
  }
  if (insecure.length > 0) {
    findings.push({
      kind: 'insecure_link',
      severity: 'warning',
      message: `${insecure.length} link${insecure.length > 1 ? 's are' : ' is'} plain http: clients and spam filters warn about them`,
      lines: insecure,
      clients: [],
      suggestion: 'Link over https.',
    });
  }
  if (input.marketing && !unsubscribe) {
    findings.push({
      kind: 'unsubscribe_link',
      severity: 'error',
      message:
        'A marketing template has no unsubscribe link: Gmail and Yahoo require one in bulk mail, and people who cannot leave report spam',
      lines: [],
      clients: [],
      suggestion: 'Add <a href="{{{unsubscribe_url}}}">Unsubscribe</a> (filled in for each recipient).',
    });
  }
  const declared = new Set(input.declared);
  const undeclared = [...new Set([input.subject ?? '', input.html, input.text ?? ''].flatMap(variableNames))].filter(
    (n) => !declared.has(n) && !BUILT_IN_VARIABLES.has(n),
  );
  for (const name of undeclared) {
    const lines = input.html
      .split('\n')
      .flatMap((l, i) => (new RegExp(`\\{\\{\\{?\\s*${name}\\b`).test(l) ? [i + 1] : []));
    findings.push({
      kind: 'undeclared_variable',
      severity: 'warning',
      message: `{{${name}}} is used but not declared: a send that gives no value renders it empty`,
      lines,
      clients: [],
      suggestion: `Declare ${name} in the template's variables with a fallback value.`,
    });
  }
  const order: Record<Severity, number> = { error: 0, warning: 1, info: 2 };
  return findings.sort((a, b) => order[a.severity] - order[b.severity] || (a.lines[0] ?? 0) - (b.lines[0] ?? 0));
}
