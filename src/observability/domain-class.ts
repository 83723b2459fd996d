import { domainOf } from '../shared/domain-name.js';
/**
 * The mailbox provider behind a recipient, as a metric label: a handful of values, never the
 * domain itself, so label cardinality stays bounded whatever the recipient list holds.
 */
export type DomainClass = 'gmail' | 'microsoft' | 'yahoo' | 'apple' | 'other';

const BY_DOMAIN: Record<string, DomainClass> = {
  'gmail.com': 'gmail',
  'googlemail.com': 'gmail',
  'outlook.com': 'microsoft',
  'hotmail.com': 'microsoft',
  'live.com': 'microsoft',
  'msn.com': 'microsoft',
  'yahoo.com': 'yahoo',
  'ymail.com': 'yahoo',
  'aol.com': 'yahoo',
  'icloud.com': 'apple',
  'me.com': 'apple',
  'mac.com': 'apple',
};

/** Custom domains hosted by the big providers, recognised by their MX host. */
const BY_MX: Array<[RegExp, DomainClass]> = [
  [/(^|\.)(google\.com|googlemail\.com)$/, 'gmail'],
  [/(^|\.)(outlook\.com|hotmail\.com)$/, 'microsoft'],
  [/(^|\.)yahoodns\.net$/, 'yahoo'],
  [/(^|\.)icloud\.com$/, 'apple'],
];

export function domainClass(recipient: string, mxHost: string | null): DomainClass {
  const domain = domainOf(recipient).toLowerCase();
  const known =
    BY_DOMAIN[domain] ??
    (/^(hotmail|outlook|live)\.[a-z.]+$/.test(domain)
      ? 'microsoft'
      : /^yahoo\.[a-z.]+$/.test(domain)
        ? 'yahoo'
        : undefined);
  if (known) return known;
  const mx = mxHost?.toLowerCase().replace(/\.$/, '');
  return (mx ? BY_MX.find(([re]) => re.test(mx))?.[1] : undefined) ?? 'other';
}
