import { validationError } from '../../shared/errors.js';
import type { ListPage } from '../../store/list-page.js';

/**
 * Offset pagination shared by every offset list (SPEC Pagination): a limit outside 1..100
 * falls back to the default 20 rather than being clamped; a bad offset is 0, and one past
 * MAX_OFFSET is MAX_OFFSET (an empty page: no database takes an offset of 1e400). The Resend
 * SDK's cursors are accepted as well: `after` or `before` an item's id.
 */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
export const MAX_OFFSET = 2 ** 31 - 1;
const MAX_CURSOR = 320;

export type Page = ListPage;

const toInt = (value: unknown): number | null => {
  if (typeof value !== 'string' || !/^-?\d+$/.test(value.trim())) return null;
  return Number(value);
};

const cursor = (query: Record<string, unknown>, field: 'after' | 'before'): string | undefined => {
  const value = query[field];
  if (value === undefined || value === '') return undefined;
  // Ids and addresses hold no control characters; PostgreSQL refuses a NUL in a text parameter (a 500).
  if (typeof value !== 'string' || value.length > MAX_CURSOR || /[\u0000-\u001f\u007f]/.test(value)) {
    throw validationError(field, 'must be the id of an item of the list (the last one of the previous page)');
  }
  return value;
};

export function parsePage(query: Record<string, unknown>): Page {
  const limit = toInt(query.limit);
  const offset = toInt(query.offset);
  const after = cursor(query, 'after');
  const before = cursor(query, 'before');
  if (after !== undefined && before !== undefined) throw validationError('before', 'cannot be combined with after');
  return {
    limit: limit !== null && limit >= 1 && limit <= MAX_LIMIT ? limit : DEFAULT_LIMIT,
    offset: offset !== null && offset >= 0 ? Math.min(offset, MAX_OFFSET) : 0,
    ...(after !== undefined ? { after } : {}),
    ...(before !== undefined ? { before } : {}),
  };
}

/**
 * An offset list in the SPEC's shape (the resource-named array and `pagination`), with the
 * Resend shape beside it: `object: "list"`, `data` (the same items) and `has_more`.
 */
export function offsetList<K extends string, T>(key: K, items: T[], total: number, page: Page, more: boolean) {
  return {
    [key]: items,
    pagination: { total, limit: page.limit, offset: page.offset, has_more: more },
    object: 'list',
    has_more: more,
    data: items,
  } as { [P in K]: T[] } & { pagination: { total: number; limit: number; offset: number; has_more: boolean }; object: 'list'; has_more: boolean; data: T[] };
}

/** A list in Resend's shape only (the routes Resend defines and the SPEC does not). */
export const cursorList = <T>(items: T[], more: boolean) => ({ object: 'list' as const, has_more: more, data: items });
