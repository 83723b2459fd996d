import { validationError } from '../shared/errors.js';
import { isUuid } from '../shared/ids.js';

export const KEYSET_PAGE_DEFAULT = 20;
export const KEYSET_PAGE_MAX = 100;

export interface KeysetQuery {
  limit?: unknown;
  after?: unknown;
  before?: unknown;
}

export interface KeysetPage {
  limit: number;
  after: string | undefined;
  before: string | undefined;
}

/**
 * Keyset page parameters as Resend-shaped lists take them (query strings): `limit` 1..100
 * (anything else is the default 20, as offset lists do), `after` or `before` an id (UUIDv7)
 * from a previous page.
 */
export function keysetPage(query: KeysetQuery): KeysetPage {
  const requested = typeof query.limit === 'string' && /^\d+$/.test(query.limit) ? Number(query.limit) : typeof query.limit === 'number' ? query.limit : null;
  const limit = requested === null || requested < 1 || requested > KEYSET_PAGE_MAX ? KEYSET_PAGE_DEFAULT : requested;
  const cursor = (field: string, value: unknown): string | undefined => {
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string' || !isUuid(value)) throw validationError(field, 'must be an id from a previous page');
    return value.toLowerCase();
  };
  const after = cursor('after', query.after);
  const before = cursor('before', query.before);
  if (after && before) throw validationError('before', 'cannot be combined with after');
  return { limit, after, before };
}
