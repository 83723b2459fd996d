import { isIP } from 'node:net';
import type { DnsResolver } from '../shared/dns.js';

/**
 * Where mail for a domain goes (RFC 5321 §5.1): its MX hosts by preference, equal
 * preferences in random order; the domain itself when it has no MX (the implicit MX); nowhere
 * when it publishes a null MX (RFC 7505) or does not exist. Every look-up goes through the
 * injected resolver, i.e. `delivery.dnsServers`.
 */

export interface MxHost {
  name: string;
  priority: number;
}

type MxRoute =
  | { kind: 'hosts'; hosts: MxHost[]; implicit: boolean }
  /** RFC 7505: the domain accepts no mail. Permanent. */
  | { kind: 'null_mx' }
  /** NXDOMAIN: the domain does not exist. Permanent. */
  | { kind: 'no_domain' }
  /** The look-up failed (SERVFAIL, timeout): try again later. */
  | { kind: 'dns_error'; message: string };

const dnsCode = (err: unknown): string => (err as NodeJS.ErrnoException)?.code ?? '';
const isNxdomain = (err: unknown) => ['ENOTFOUND', 'NXDOMAIN', 'ENONAME'].includes(dnsCode(err));
const isNodata = (err: unknown) => dnsCode(err) === 'ENODATA';
const isNullExchange = (exchange: string) => exchange === '' || exchange === '.';

/** Sorts by preference and shuffles hosts of equal preference (load spreading). */
export function orderMxHosts(records: MxHost[], random: () => number = Math.random): MxHost[] {
  const keyed = records.map((r) => ({ r, tie: random() }));
  keyed.sort((a, b) => a.r.priority - b.r.priority || a.tie - b.tie);
  return keyed.map((k) => k.r);
}

export async function resolveMxRoute(
  domain: string,
  resolver: DnsResolver,
  random: () => number = Math.random,
): Promise<MxRoute> {
  let records: Array<{ exchange: string; priority: number }>;
  try {
    records = await resolver.resolveMx(domain);
  } catch (err) {
    if (isNodata(err)) return { kind: 'hosts', hosts: [{ name: domain, priority: 0 }], implicit: true };
    if (isNxdomain(err)) return { kind: 'no_domain' };
    return { kind: 'dns_error', message: `MX look-up for ${domain} failed: ${dnsCode(err) || (err as Error).message}` };
  }
  if (records.length === 0) return { kind: 'hosts', hosts: [{ name: domain, priority: 0 }], implicit: true };
  const usable = records.filter((r) => !isNullExchange(r.exchange));
  // A null MX must stand alone (RFC 7505 §3); beside real hosts it is ignored.
  if (usable.length === 0) return { kind: 'null_mx' };
  const hosts = usable.map((r) => ({ name: r.exchange.replace(/\.$/, '').toLowerCase(), priority: r.priority }));
  return { kind: 'hosts', hosts: orderMxHosts(hosts, random), implicit: false };
}

type AddressLookup =
  | { kind: 'addresses'; addresses: string[] }
  /** The name has no A or AAAA record (or does not exist). */
  | { kind: 'none' }
  | { kind: 'dns_error'; message: string };

/** IPv4 addresses first, then IPv6; an IP literal stands for itself. */
export async function resolveAddresses(name: string, resolver: DnsResolver): Promise<AddressLookup> {
  if (isIP(name)) return { kind: 'addresses', addresses: [name] };
  const addresses: string[] = [];
  let error: unknown = null;
  for (const lookup of [() => resolver.resolve4(name), () => resolver.resolve6(name)]) {
    try {
      addresses.push(...(await lookup()));
    } catch (err) {
      if (!isNodata(err) && !isNxdomain(err)) error = err;
    }
  }
  if (addresses.length > 0) return { kind: 'addresses', addresses };
  if (error)
    return {
      kind: 'dns_error',
      message: `address look-up for ${name} failed: ${dnsCode(error) || (error as Error).message}`,
    };
  return { kind: 'none' };
}
