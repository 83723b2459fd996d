import { domainToASCII } from 'node:url';

const LABEL_RE = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Normalises a domain name to lower-case ASCII (punycode for IDNs), or returns null when it
 * is not a usable public host name: IP literals, single labels, bad labels, over 253 chars.
 */
export function normalizeDomain(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '' || /[\s/@:]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed).toLowerCase();
  if (ascii === '' || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL_RE.test(l))) return null;
  if (/^\d+$/.test(labels[labels.length - 1]!)) return null; // 192.0.2.1 and friends
  return ascii;
}

/** The domain part of an address, as written (after its last `@`). */
export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1);
