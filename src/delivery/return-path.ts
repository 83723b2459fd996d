import { createHmac } from 'node:crypto';
import { safeEqual } from '../shared/crypto.js';

/**
 * VERP envelope senders: every email goes out with its own MAIL FROM,
 * `b-<email id, 32 hex>-<tag>@<subdomain>.<sending domain>`, so that an asynchronous bounce
 * (a DSN mailed back later) names the email it is about; the DSN's Final-Recipient names the
 * recipient. One MAIL FROM per email (not per recipient) keeps several recipients of a domain
 * in one transaction. The tag is an HMAC under the instance secret key, so forged bounces
 * cannot suppress arbitrary addresses. Lower-case hex only: some servers change the case of
 * local parts.
 */

const TAG_LENGTH = 10;

const tagOf = (secretKey: Buffer, hexId: string): string =>
  createHmac('sha256', secretKey).update(`return-path:${hexId}`).digest('hex').slice(0, TAG_LENGTH);

/** The bounce domain of a sending domain: `bounces.example.com`, or the domain itself when `subdomain` is empty. */
export const bounceDomainOf = (sendingDomain: string, subdomain: string): string =>
  subdomain ? `${subdomain}.${sendingDomain}` : sendingDomain;

export function returnPathFor(emailId: string, bounceDomain: string, secretKey: Buffer): string {
  const hexId = emailId.replace(/-/g, '').toLowerCase();
  return `b-${hexId}-${tagOf(secretKey, hexId)}@${bounceDomain}`;
}

/** The email id a VERP address stands for, or null when it is not one of ours (or forged). */
export function parseReturnPath(address: string, secretKey: Buffer): string | null {
  const match = /^b-([0-9a-f]{32})-([0-9a-f]+)@/i.exec(address.trim());
  if (!match) return null;
  const hexId = match[1]!.toLowerCase();
  if (!safeEqual(match[2]!.toLowerCase(), tagOf(secretKey, hexId))) return null;
  return `${hexId.slice(0, 8)}-${hexId.slice(8, 12)}-${hexId.slice(12, 16)}-${hexId.slice(16, 20)}-${hexId.slice(20)}`;
}
