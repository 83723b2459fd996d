import addressparser from 'nodemailer/lib/addressparser';
import { normalizeDomain } from '../shared/domain-name.js';
import { validationError } from '../shared/errors.js';

export interface Address {
  name: string;
  address: string;
}

/** Bytes that would end a header line or smuggle one in. */
const LINE_BREAK = /[\r\n\u0000\u2028\u2029]/;
// Dot-atom local part (RFC 5322 §3.2.3), ASCII only: what every receiving MTA accepts.
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

export const hasLineBreak = (value: string): boolean => LINE_BREAK.test(value);

/** Refuses a header-bound string that carries a line break: the one way to inject a header. */
export function singleLine(field: string, value: string): string {
  if (hasLineBreak(value)) throw validationError(field, 'must not contain line breaks');
  return value;
}

/**
 * A bare address, checked and normalised: the domain lower-cased (IDNs to punycode), the local
 * part kept as given. Null when it is not a deliverable address.
 */
export function normalizeAddress(value: string): string | null {
  if (hasLineBreak(value) || value.length > 254) return null;
  const at = value.lastIndexOf('@');
  if (at < 1) return null;
  const local = value.slice(0, at);
  const domain = normalizeDomain(value.slice(at + 1));
  if (!domain || local.length > 64 || !LOCAL_PART.test(local)) return null;
  return `${local}@${domain}`;
}

export function requireAddress(field: string, value: string): string {
  const address = normalizeAddress(value.trim());
  if (!address) throw validationError(field, `"${value.slice(0, 100)}" is not a valid email address`);
  return address;
}

/**
 * Parses one mailbox, bare (`ann@example.com`) or with a display name
 * (`Ann Example <ann@example.com>`), as users of Resend write `from` and `to`.
 */
export function parseMailbox(field: string, value: string): Address {
  singleLine(field, value);
  const parsed = addressparser(value, { flatten: true });
  if (parsed.length > 1)
    throw validationError(field, `"${value.slice(0, 100)}" must be one address, e.g. "Name <name@example.com>"`);
  if (parsed.length === 0 || !parsed[0]!.address)
    throw validationError(field, `"${value.slice(0, 100)}" is not a valid email address`);
  return { name: parsed[0]!.name.trim(), address: requireAddress(field, parsed[0]!.address) };
}

/** A string or an array of strings, each one mailbox. */
export function parseMailboxes(field: string, value: string | string[] | undefined): Address[] {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  return list.map((v, i) => parseMailbox(Array.isArray(value) ? `${field}[${i}]` : field, v));
}
