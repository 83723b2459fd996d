import { promises as dns } from 'node:dns';

/** The DNS look-ups mailsvc makes, narrowed so tests and callers see exactly what is used. */
export interface DnsResolver {
  resolveMx(name: string): Promise<Array<{ exchange: string; priority: number }>>;
  resolve4(name: string): Promise<string[]>;
  resolve6(name: string): Promise<string[]>;
  resolveCname(name: string): Promise<string[]>;
  resolveTxt(name: string): Promise<string[][]>;
  /** PTR records of a name such as `1.0.0.127.in-addr.arpa` (see deliverability/reverse-name.ts). */
  resolvePtr(name: string): Promise<string[]>;
}

/**
 * A resolver that asks `servers` ("1.2.3.4", "127.0.0.1:5353", "[::1]:5353"); with none it
 * uses the system's. Every DNS look-up in mailsvc goes through one of these so a test can
 * point the whole program at its own DNS server.
 */
export function createResolver(servers: string[], timeoutMs = 3000): DnsResolver {
  const resolver = new dns.Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  return resolver;
}

/** DNS error codes that mean "this name has no such record" rather than "DNS is broken". */
export const isNoRecordError = (err: unknown): boolean =>
  ['ENOTFOUND', 'ENODATA', 'ENONAME', 'NXDOMAIN'].includes((err as NodeJS.ErrnoException)?.code ?? '');
