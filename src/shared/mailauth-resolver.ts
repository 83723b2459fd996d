import type { DnsResolver } from './dns.js';

/** mailauth's resolver signature over ours, so its look-ups (DKIM, SPF with its ptr mechanism, DMARC, MTA-STS) use delivery.dnsServers too. */
export function mailauthResolver(resolver: DnsResolver) {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- mailauth types its resolver's answer as any
  return async (name: string, rrtype: string): Promise<any> => {
    switch (rrtype.toUpperCase()) {
      case 'TXT':
        return resolver.resolveTxt(name);
      case 'A':
        return resolver.resolve4(name);
      case 'AAAA':
        return resolver.resolve6(name);
      case 'MX':
        return resolver.resolveMx(name);
      case 'CNAME':
        return resolver.resolveCname(name);
      case 'PTR':
        return resolver.resolvePtr(name);
      default:
        throw Object.assign(new Error(`unsupported record type ${rrtype}`), { code: 'ENOTIMP' });
    }
  };
}
