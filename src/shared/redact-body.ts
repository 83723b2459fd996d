/**
 * A request or response body as a request log keeps it: secrets replaced by "[redacted]",
 * attachment content by its size, and anything longer than `maxChars` once serialised cut to
 * a note of its size. Pure; returns JSON text (or null for no body).
 */

/** Field names whose values are credentials, wherever they appear. */
const SECRET_FIELDS = new Set([
  'token',
  'secret',
  'signing_secret',
  'previous_secret',
  'password',
  'pass',
  'api_key',
  'apikey',
  'access_token',
  'refresh_token',
  'private_key',
  'authorization',
  'client_secret',
]);

/** Fields whose values are file content (attachments on every surface). */
const CONTENT_FIELDS = new Set(['content']);
const CONTENT_PARENTS = new Set(['attachments']);

export const REDACTED = '[redacted]';
const DEFAULT_MAX_BODY_CHARS = 64 * 1024;

function redact(value: unknown, parent: string | null, depth: number): unknown {
  if (depth > 32) return '[too deep]';
  if (Array.isArray(value)) return value.map((v) => redact(v, parent, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const name = key.toLowerCase();
    if (SECRET_FIELDS.has(name) && v !== null && v !== undefined) out[key] = REDACTED;
    else if (CONTENT_FIELDS.has(name) && parent !== null && CONTENT_PARENTS.has(parent) && typeof v === 'string')
      out[key] = `[${v.length} characters of attachment content]`;
    else out[key] = redact(v, name, depth + 1);
  }
  return out;
}

export function redactBody(body: unknown, maxChars = DEFAULT_MAX_BODY_CHARS): string | null {
  if (body === undefined || body === null) return null;
  if (Buffer.isBuffer(body) || body instanceof Uint8Array) return JSON.stringify(`[${body.length} bytes]`);
  if (typeof body === 'string') return JSON.stringify(body.length > maxChars ? `[${body.length} characters]` : body);
  if (typeof body !== 'object') return JSON.stringify(body);
  if (typeof (body as { pipe?: unknown }).pipe === 'function') return JSON.stringify('[stream]');
  const text = JSON.stringify(redact(body, null, 0));
  return text.length > maxChars ? JSON.stringify({ truncated: true, characters: text.length }) : text;
}
