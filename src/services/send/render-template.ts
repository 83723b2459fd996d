/**
 * `{{name}}` and `{{a.b}}` interpolation. Values are HTML-escaped in html and inserted as-is
 * in subject and text. A missing variable renders as the empty string: a template never
 * fails to render, and the log shows what was sent.
 */

const PLACEHOLDER = /\{\{\s*([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)\s*\}\}/g;

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
  return template.replace(PLACEHOLDER, (_, path: string) => {
    const value = lookup(variables, path);
    return mode === 'html' ? escapeHtml(value) : value;
  });
}

/** Subjects are one header line: line breaks that variables bring in become spaces. */
export const renderSubject = (template: string, variables: Variables): string =>
  renderTemplate(template, variables, 'text').replace(/[\r\n\u2028\u2029]+/g, ' ');
