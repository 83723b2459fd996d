import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Compact signed tokens for links in mail (unsubscribe, tracking): `<payload>.<mac>`, both
 * base64url; the payload is JSON. The MAC key is derived from the instance secret key per
 * purpose, so a token for one purpose is worthless for another.
 */
export function tokenKey(secretKey: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), `mailsvc ${purpose}`, 32));
}

const MAC_BYTES = 16;
const mac = (key: Buffer, payload: string): Buffer =>
  createHmac('sha256', key).update(payload).digest().subarray(0, MAC_BYTES);

export function signToken(key: Buffer, payload: Record<string, unknown>): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${mac(key, body).toString('base64url')}`;
}

/** The payload of a genuine token, or null for anything tampered, truncated or malformed. */
export function verifyToken<T extends Record<string, unknown>>(key: Buffer, token: string): T | null {
  if (token.length > 2048) return null;
  const [body, signature, extra] = token.split('.');
  if (!body || !signature || extra !== undefined) return null;
  const given = Buffer.from(signature, 'base64url');
  const expected = mac(key, body);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  // Base64 decoding ignores the spare low bits of the last character (and stray characters), so
  // other spellings of the same MAC decode alike: only the one signToken wrote is the token.
  if (given.toString('base64url') !== signature) return null;
  try {
    const payload: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    return payload && typeof payload === 'object' && !Array.isArray(payload) ? (payload as T) : null;
  } catch {
    return null;
  }
}
