import { normalizeDomain } from '../../shared/domain-name.js';
import type { RouteKind } from '../../store/receiving.js';

/**
 * Route addresses and how a recipient finds its route. Pure: no I/O.
 *
 * A route's address is `local@domain` where the local part is a literal (`support`), a
 * pattern with `*` standing for any run of characters (`reply+*`, `*-bounces`), or `*` alone
 * for every address of the domain. Local parts compare without regard to case, as every
 * mailbox provider treats them.
 */

interface RouteAddress {
  localPart: string;
  domain: string;
  kind: RouteKind;
}

// Dot-atom characters (RFC 5322 §3.2.3); `*` is one of them and serves as the wildcard.
const LOCAL_PATTERN = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/** Parses a route address; null when it is not one (the caller says why). */
export function parseRouteAddress(value: string): RouteAddress | null {
  const at = value.lastIndexOf('@');
  if (at < 1) return null;
  const localPart = value.slice(0, at).trim().toLowerCase();
  const domain = normalizeDomain(value.slice(at + 1));
  if (!domain || localPart.length > 64 || !LOCAL_PATTERN.test(localPart)) return null;
  const kind: RouteKind = localPart === '*' ? 'catch_all' : localPart.includes('*') ? 'pattern' : 'address';
  return { localPart, domain, kind };
}

/** Splits a recipient into its lower-cased local part and normalised domain. */
export function splitRecipient(address: string): { localPart: string; domain: string } | null {
  const at = address.lastIndexOf('@');
  if (at < 1) return null;
  const domain = normalizeDomain(address.slice(at + 1));
  return domain ? { localPart: address.slice(0, at).toLowerCase(), domain } : null;
}

const escapeRegExp = (text: string): string => text.replace(/[.+?^${}()|[\]\\/]/g, '\\$&');

function patternMatches(pattern: string, localPart: string): boolean {
  const re = new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`);
  return re.test(localPart);
}

/** How specific a route is: an address before any pattern, a longer literal pattern before a shorter one, the catch-all last. */
const specificity = (route: { kind: RouteKind; local_part: string }): number =>
  route.kind === 'address' ? 1000 : route.kind === 'pattern' ? 1 + route.local_part.replace(/\*/g, '').length : 0;

export interface MatchableRoute {
  kind: RouteKind;
  local_part: string;
  created_at: number;
  id: string;
}

/** The most specific route covering the local part (ties: the oldest route), or null. */
export function matchRoute<R extends MatchableRoute>(routes: readonly R[], localPart: string): R | null {
  const local = localPart.toLowerCase();
  let best: R | null = null;
  for (const route of routes) {
    const covers =
      route.kind === 'catch_all' ||
      (route.kind === 'address' ? route.local_part === local : patternMatches(route.local_part, local));
    if (!covers) continue;
    if (
      !best ||
      specificity(route) > specificity(best) ||
      (specificity(route) === specificity(best) &&
        (route.created_at < best.created_at || (route.created_at === best.created_at && route.id < best.id)))
    ) {
      best = route;
    }
  }
  return best;
}
