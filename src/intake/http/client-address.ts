import ipaddr from 'ipaddr.js';
import type { Next } from 'koa';
import type { Ctx } from './context.js';

/**
 * Which peers are reverse proxies of ours (`http.trustProxy`): a count of hops in front of the
 * server (0: none), or their addresses and networks in CIDR form. As Express's and Django's
 * settings: X-Forwarded-For is a list each proxy appends its peer to, so only the entries right
 * of the last untrusted hop were written by someone we trust; the leftmost ones are whatever
 * the client sent.
 */
type TrustProxy = number | string[];

interface ClientOrigin {
  /** The client's address: the rightmost address of the chain that is not a trusted proxy. */
  address: string;
  /** Whether the request came through a trusted proxy (so its X-Forwarded-Proto/Host count). */
  proxied: boolean;
}

const canonical = (address: string): string | undefined => {
  // IPv4-mapped IPv6 (a dual-stack socket's ::ffff:203.0.113.5) is the IPv4 address.
  try {
    return ipaddr.process(address.trim()).toString();
  } catch {
    return undefined;
  }
};

const parseTrusted = (trust: string[]): Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> =>
  trust.map((cidr) => ipaddr.parseCIDR(cidr));

/**
 * The client behind the chain: `peer` is the socket's address, `forwardedFor` the
 * X-Forwarded-For header (entries appended left to right by each proxy). Walks from the right
 * while the hop is trusted; an entry that is not an address stops the walk at the proxy that
 * wrote it.
 */
export function resolveClient(peer: string, forwardedFor: string | undefined, trust: TrustProxy): ClientOrigin {
  const socket = canonical(peer) ?? peer;
  const entries = (forwardedFor ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const chain = [...entries, socket];
  const networks = Array.isArray(trust) ? parseTrusted(trust) : [];
  const trusted = (hop: number, address: string): boolean => {
    if (!Array.isArray(trust)) return hop < trust;
    const parsed = ipaddr.parse(address);
    return networks.some(([net, bits]) => net.kind() === parsed.kind() && parsed.match(net, bits));
  };
  if (!trusted(0, socket) || canonical(socket) === undefined) return { address: socket, proxied: false };
  let client = socket;
  for (let hop = 1; hop < chain.length; hop++) {
    const next = canonical(chain[chain.length - 1 - hop]!);
    if (next === undefined) break;
    client = next;
    if (!trusted(hop, next)) break;
  }
  return { address: client, proxied: true };
}

/**
 * The one place the HTTP server learns who its client is. Sets `ctx.state.clientAddress` (and
 * Koa's `ctx.ip` to the same), and drops the forwarded headers of a request that did not come
 * through a trusted proxy, so nothing after it can read a client's own X-Forwarded-Proto or
 * -Host. The sign-in lockout, the failed-key throttle, per-address rate limits and the
 * engagement classifier all read the address from here.
 */
export function clientAddress(trust: TrustProxy) {
  return async function clientAddressMiddleware(ctx: Ctx, next: Next): Promise<void> {
    const origin = resolveClient(ctx.req.socket.remoteAddress ?? '', ctx.get('X-Forwarded-For') || undefined, trust);
    if (!origin.proxied) {
      for (const header of ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host']) delete ctx.req.headers[header];
    }
    ctx.state.clientAddress = origin.address;
    ctx.request.ip = origin.address;
    await next();
  };
}
