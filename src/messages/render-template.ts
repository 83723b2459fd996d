/**
 * `{{name}}` and `{{a.b}}` interpolation, also written `{{{name}}}` (Resend's form) and with
 * a fallback, `{{{FIRST_NAME|there}}}`. Values are HTML-escaped in html (in both forms) and
 * inserted as-is in subject and text. A missing variable renders as its fallback or the empty
 * string: a template never fails to render, and the log shows what was sent.
 */

const NAME = '([A-Za-z_][\\w-]*(?:\\.[A-Za-z_][\\w-]*)*)';
const FALLBACK = '(?:\\|([^{}|]*))?';
const PLACEHOLDER = new RegExp(
  `\\{\\{\\{\\s*${NAME}\\s*${FALLBACK}\\}\\}\\}|\\{\\{\\s*${NAME}\\s*${FALLBACK}\\}\\}`,
  'g',
);

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

export type Variables = Record<string, unknown>;

function lookup(variables: Variables, path: string): string {
  let value: unknown = variables;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return '';
    value = (value as Record<string, unknown>)[part];
  }
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function renderTemplate(template: string, variables: Variables, mode: 'html' | 'text'): string {
  return template.replace(
    PLACEHOLDER,
    (_, triplePath?: string, tripleFallback?: string, path?: string, fallback?: string) => {
      const found = lookup(variables, (triplePath ?? path)!);
      const value = found === '' ? (tripleFallback ?? fallback ?? '').trim() : found;
      return mode === 'html' ? escapeHtml(value) : value;
    },
  );
}

/** Subjects are one header line: line breaks that variables bring in become spaces. */
export const renderSubject = (template: string, variables: Variables): string =>
  renderTemplate(template, variables, 'text').replace(/[\r\n\u2028\u2029]+/g, ' ');

/** The variables a template names (`{{a.b}}` names `a`), each once, in order of appearance. */
export function variableNames(template: string): string[] {
  const names = new Set<string>();
  for (const m of template.matchAll(PLACEHOLDER)) names.add((m[1] ?? m[3])!.split('.')[0]!);
  return [...names];
}
