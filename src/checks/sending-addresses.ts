import ipaddr from 'ipaddr.js';
import type { Config } from '../config/schema.js';
import { isNoRecordError, type DnsResolver } from '../shared/dns.js';

/**
 * The public addresses this server sends from: `deliverability.sendingIps` when set, else
 * the A and AAAA records of `delivery.hostname` (the name receivers see in EHLO and expect
 * the reverse DNS of the connecting address to match).
 */
export async function sendingAddresses(config: Config, resolver: DnsResolver): Promise<string[]> {
  const configured = config.deliverability.sendingIps
    .filter((ip) => ipaddr.isValid(ip))
    .map((ip) => ipaddr.process(ip).toString());
  if (configured.length > 0) return configured;
  return addressesOf(config.delivery.hostname, resolver);
}

/** A and AAAA records of a name; [] when it has none (a DNS failure throws). */
export async function addressesOf(name: string, resolver: DnsResolver): Promise<string[]> {
  const lookup = async (query: () => Promise<string[]>) => {
    try {
      return await query();
    } catch (err) {
      if (isNoRecordError(err)) return [];
      throw err;
    }
  };
  const [v4, v6] = await Promise.all([lookup(() => resolver.resolve4(name)), lookup(() => resolver.resolve6(name))]);
  return [...v4, ...v6];
}
