import { isNoRecordError, type DnsResolver } from '../shared/dns.js';

/**
 * A short-lived cache in front of the resolver for delivery's MX and address look-ups: a busy
 * destination would otherwise cost three DNS round trips per message. Answers are kept for
 * `ttlMs` (a minute by default, below the TTL of nearly every MX record), and so are "no such
 * record" answers (an IPv4-only host is asked for AAAA once a minute, not once a message);
 * failures (SERVFAIL, timeouts) are not kept. Concurrent look-ups of one name share one query.
 */
export function cachedResolver(
  resolver: DnsResolver,
  now: () => number,
  ttlMs = 60_000,
  maxEntries = 10_000,
): DnsResolver {
  const cache = new Map<string, { until: number; value: Promise<unknown> }>();
  const cached = <T>(kind: string, name: string, lookup: () => Promise<T>): Promise<T> => {
    const key = `${kind} ${name.toLowerCase()}`;
    const hit = cache.get(key);
    if (hit && hit.until > now()) return hit.value as Promise<T>;
    const value = lookup();
    if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
    cache.set(key, { until: now() + ttlMs, value });
    value.catch((err: unknown) => {
      if (!isNoRecordError(err) && cache.get(key)?.value === value) cache.delete(key);
    });
    return value;
  };
  return {
    resolveMx: (name) => cached('MX', name, () => resolver.resolveMx(name)),
    resolve4: (name) => cached('A', name, () => resolver.resolve4(name)),
    resolve6: (name) => cached('AAAA', name, () => resolver.resolve6(name)),
    resolveCname: (name) => resolver.resolveCname(name),
    resolveTxt: (name) => resolver.resolveTxt(name),
    resolvePtr: (name) => resolver.resolvePtr(name),
  };
}
