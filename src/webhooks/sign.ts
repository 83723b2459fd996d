import { createHmac } from 'node:crypto';

/**
 * Webhook signatures, as pure functions of the secrets, the timestamp and the exact bytes
 * sent. The body passed here is the body sent: callers serialise once and reuse the buffer.
 */

const SECRET_PREFIX = 'whsec_';

/** Legacy: hex HMAC-SHA256 of `<timestamp>.<body>`, keyed with the secret string as given. */
export function legacySignature(secret: string, timestamp: number, body: Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** Standard Webhooks: the key is the base64-decoded part of the secret after `whsec_`. */
const standardKey = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');

/** Standard Webhooks: `v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>`. */
export function standardSignature(secret: string, messageId: string, timestamp: number, body: Buffer): string {
  return `v1,${createHmac('sha256', standardKey(secret)).update(`${messageId}.${timestamp}.`).update(body).digest('base64')}`;
}

interface SignInput {
  /** Current secret first; during a rotation window the previous one follows. */
  secrets: readonly string[];
  /** Unix seconds. */
  timestamp: number;
  body: Buffer;
}

/**
 * Legacy headers. `X-Service-Signature` keeps its single-digest format (receivers compare it
 * whole) and is computed with the current secret; while a rotated-out secret is still valid,
 * `X-Service-Signature-Previous` carries the digest computed with it.
 */
export function legacyHeaders(input: SignInput & { eventType: string }): Record<string, string> {
  const [current, previous] = input.secrets;
  if (current === undefined) throw new Error('no signing secret');
  const headers: Record<string, string> = {
    'x-service-signature': legacySignature(current, input.timestamp, input.body),
    'x-service-timestamp': String(input.timestamp),
    'x-service-event': input.eventType,
  };
  if (previous !== undefined)
    headers['x-service-signature-previous'] = legacySignature(previous, input.timestamp, input.body);
  return headers;
}

/** Standard Webhooks headers; one space-separated `v1,` entry per valid secret. */
export function standardHeaders(input: SignInput & { messageId: string }): Record<string, string> {
  if (input.secrets.length === 0) throw new Error('no signing secret');
  return {
    'webhook-id': input.messageId,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': input.secrets
      .map((s) => standardSignature(s, input.messageId, input.timestamp, input.body))
      .join(' '),
  };
}
