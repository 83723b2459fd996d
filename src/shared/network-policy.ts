import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { isNoRecordError, type DnsResolver } from './dns.js';

/**
 * Where mailsvc may open outbound HTTP connections on a customer's behalf (webhooks,
 * attachment URLs). Without `allowPrivateNetworks`, only HTTPS to public unicast addresses:
 * never loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved, nor the
 * IPv6 forms that embed an IPv4 address (mapped, NAT64, 6to4, Teredo). The address check runs
 * when a URL is registered and again on every connection, on the very address connected to,
 * so a name that later resolves elsewhere (DNS rebinding) is still refused.
 */
export interface NetworkPolicy {
  allowPrivateNetworks: boolean;
  resolver: DnsResolver;
}

/** A URL or address the policy refuses; `message` names the reason for the customer. */
export class NetworkPolicyError extends Error {
  readonly code = 'EPOLICY';
  constructor(message: string) {
    super(message);
    this.name = 'NetworkPolicyError';
  }
}

/** True only for globally routable unicast addresses (IPv4 or IPv6). */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  // process() turns ::ffff:a.b.c.d into a.b.c.d, so a mapped loopback is judged as loopback.
  return ipaddr.process(bare).range() === 'unicast';
}

const MAX_URL_LENGTH = 2048;

/**
 * Checks a URL's form against the policy (no DNS): http(s) only, HTTPS unless private
 * networks are allowed, no credentials, and an IP literal host must itself be public.
 * Returns the normalised URL (fragment dropped).
 */
export function parsePolicyUrl(input: string, policy: Pick<NetworkPolicy, 'allowPrivateNetworks'>): URL {
  if (input.length > MAX_URL_LENGTH) throw new NetworkPolicyError(`must be at most ${MAX_URL_LENGTH} characters`);
  if (!URL.canParse(input)) throw new NetworkPolicyError('must be an absolute URL');
  const url = new URL(input);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new NetworkPolicyError('must be an https:// URL');
  if (url.protocol === 'http:' && !policy.allowPrivateNetworks) throw new NetworkPolicyError('must be an https:// URL');
  if (url.username !== '' || url.password !== '') throw new NetworkPolicyError('must not contain credentials');
  if (url.hostname === '') throw new NetworkPolicyError('must name a host');
  const host = bareHost(url.hostname);
  if (isIP(host) !== 0 && !policy.allowPrivateNetworks && !isPublicAddress(host)) {
    throw new NetworkPolicyError(`must not point to a private, loopback or link-local address (${host})`);
  }
  url.hash = '';
  return url;
}

/** `[::1]` -> `::1`; names are lower-cased and lose a trailing dot. */
const bareHost = (hostname: string): string =>
  hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();

const isLocalhostName = (host: string): boolean => host === 'localhost' || host.endsWith('.localhost');

/**
 * Every address `host` resolves to, through the injected resolver (A and AAAA). `localhost`
 * names resolve to loopback without DNS (RFC 6761). Throws ENOTFOUND when nothing resolves.
 */
async function resolveHost(resolver: DnsResolver, host: string): Promise<string[]> {
  const name = bareHost(host);
  if (isIP(name) !== 0) return [name];
  if (isLocalhostName(name)) return ['127.0.0.1', '::1'];
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
  const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  if (addresses.length > 0) return addresses;
  const failure = [v4, v6].find(
    (r): r is PromiseRejectedResult => r.status === 'rejected' && !isNoRecordError(r.reason),
  );
  if (failure) throw failure.reason;
  throw Object.assign(new Error(`${name} does not resolve`), { code: 'ENOTFOUND', hostname: name });
}

/** Resolves `host` and refuses it unless every address is allowed by the policy. */
async function resolveAllowedAddresses(policy: NetworkPolicy, host: string): Promise<string[]> {
  const addresses = await resolveHost(policy.resolver, host);
  if (!policy.allowPrivateNetworks) {
    const refused = addresses.find((a) => !isPublicAddress(a));
    if (refused !== undefined) {
      throw new NetworkPolicyError(
        `${bareHost(host)} resolves to a private, loopback or link-local address (${refused})`,
      );
    }
  }
  return addresses;
}

/**
 * The registration-time check: the URL's form, then its host's addresses. A host that does
 * not resolve is refused; one whose DNS is failing right now is accepted (the check is
 * repeated on every delivery anyway).
 */
export async function checkUrl(input: string, policy: NetworkPolicy): Promise<URL> {
  const url = parsePolicyUrl(input, policy);
  try {
    await resolveAllowedAddresses(policy, url.hostname);
  } catch (err) {
    if (err instanceof NetworkPolicyError) throw err;
    if (isNoRecordError(err)) throw new NetworkPolicyError(`host ${bareHost(url.hostname)} does not resolve`);
  }
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `http.request`/`net.connect`: resolves through our resolver, applies the
 * policy to the result and hands exactly the checked addresses to the socket, so the address
 * connected to is the address that was checked.
 */
export function pinnedLookup(policy: NetworkPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolveAllowedAddresses(policy, hostname).then(
      (addresses) => {
        const wanted =
          options.family === 4 || options.family === 6
            ? addresses.filter((a) => isIP(a) === options.family)
            : addresses;
        const list: LookupAddress[] = wanted.map((address) => ({ address, family: isIP(address) }));
        if (list.length === 0) {
          callback(
            Object.assign(new Error(`${hostname} has no IPv${options.family} address`), { code: 'ENOTFOUND' }),
            '',
            0,
          );
        } else if (options.all) {
          callback(null, list);
        } else {
          callback(null, list[0]!.address, list[0]!.family);
        }
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}
