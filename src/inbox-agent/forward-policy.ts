import addressparser from 'nodemailer/lib/addressparser';
import { normalizeAddress } from '../messages/addresses.js';

/**
 * Where the inbox agent may forward a thread: the workspace's verified domains and what the
 * operator listed in the agent's `forward_to` (addresses, "@domain"). The model's answer names
 * the address, and the model read the thread, so an inbound message can put any address there:
 * this list, not the model, decides what leaves. Pure.
 */
type ForwardVerdict =
  { allowed: true; to: string[] } | { allowed: false; to: string[]; outside: string[] } | { invalid: string };

export function checkForward(to: string, verifiedDomains: string[], forwardTo: string[]): ForwardVerdict {
  const parsed = addressparser(to, { flatten: true });
  const addresses: string[] = [];
  for (const entry of parsed) {
    const address = entry.address ? normalizeAddress(entry.address) : null;
    if (!address) return { invalid: `"${to.slice(0, 100)}" is not a list of email addresses` };
    addresses.push(address);
  }
  if (addresses.length === 0) return { invalid: 'no address to forward to' };
  const domains = new Set(verifiedDomains.map((d) => d.toLowerCase()));
  const listed = new Set(forwardTo.map((entry) => entry.toLowerCase()));
  const outside = addresses.filter((address) => {
    const lower = address.toLowerCase();
    const domain = lower.slice(lower.lastIndexOf('@') + 1);
    return !domains.has(domain) && !listed.has(`@${domain}`) && !listed.has(lower);
  });
  return outside.length === 0 ? { allowed: true, to: addresses } : { allowed: false, to: addresses, outside };
}
