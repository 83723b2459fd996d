import type { SelectQueryBuilder } from 'kysely';
import { validationError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';

/**
 * A page of a list, newest first: by `offset` (SPEC offset lists), or after or before an id
 * (the cursors of the Resend SDK). With a cursor, `offset` is ignored.
 */
export interface ListPage {
  limit: number;
  offset: number;
  /** Items older than this id. */
  after?: string | undefined;
  /** Items newer than this id (still returned newest first). */
  before?: string | undefined;
}

export interface PageOf<T> {
  rows: T[];
  /** Whether more items exist in the direction of travel. */
  more: boolean;
}

/**
 * The one keyset reader: one page of `query`, ordered by `column` (ids are UUIDv7, so they
 * sort by creation time), newest first unless `oldestFirst`. One row more than asked is read to
 * know whether there are more.
 */
export async function readPage<T>(
  query: SelectQueryBuilder<any, any, T>,
  column: string,
  page: ListPage,
  oldestFirst = false,
): Promise<PageOf<T>> {
  // The column is the caller's literal; kysely cannot type a column passed as a string.
  const q = query;
  const [forward, backward, past, ahead] = oldestFirst
    ? (['asc', 'desc', '>', '<'] as const)
    : (['desc', 'asc', '<', '>'] as const);
  if (page.before !== undefined) {
    const rows = await q
      .where(column, ahead, page.before)
      .orderBy(column, backward)
      .limit(page.limit + 1)
      .execute();
    return { rows: rows.slice(0, page.limit).reverse(), more: rows.length > page.limit };
  }
  const from = page.after !== undefined ? q.where(column, past, page.after) : q;
  const rows = await from
    .orderBy(column, forward)
    .limit(page.limit + 1)
    .offset(page.after !== undefined ? 0 : page.offset)
    .execute();
  return { rows: rows.slice(0, page.limit), more: rows.length > page.limit };
}

/**
 * The same for rows whose key does not sort by time (random ids, addresses): newest first by
 * `time`, then by `key`. A cursor is the key of a row; `cursorTime` is that row's time, looked
 * up by the caller (undefined: no such row, which reads as an empty page).
 */
export async function readTimePage<T>(
  query: SelectQueryBuilder<any, any, T>,
  columns: { time: string; key: string },
  page: ListPage,
  cursorTime?: number,
): Promise<PageOf<T>> {
  const q = query;
  const { time, key } = columns;
  const cursor = page.before ?? page.after;
  if (cursor !== undefined && cursorTime === undefined) return { rows: [], more: false };
  if (page.before !== undefined) {
    const rows = await q
      .where((eb) => eb.or([eb(time, '>', cursorTime), eb.and([eb(time, '=', cursorTime), eb(key, '>', page.before)])]))
      .orderBy(time, 'asc')
      .orderBy(key, 'asc')
      .limit(page.limit + 1)
      .execute();
    return { rows: rows.slice(0, page.limit).reverse(), more: rows.length > page.limit };
  }
  const from =
    page.after !== undefined
      ? q.where((eb) =>
          eb.or([eb(time, '<', cursorTime), eb.and([eb(time, '=', cursorTime), eb(key, '<', page.after)])]),
        )
      : q;
  const rows = await from
    .orderBy(time, 'desc')
    .orderBy(key, 'desc')
    .limit(page.limit + 1)
    .offset(page.after !== undefined ? 0 : page.offset)
    .execute();
  return { rows: rows.slice(0, page.limit), more: rows.length > page.limit };
}

/** What a service's list returns: one page, the total count and whether more follow. */
export interface Listed<T> {
  items: T[];
  total: number;
  more: boolean;
}

/**
 * The one page parser, of every list on both surfaces, the dashboard and the CLI (SPEC
 * Pagination): on an offset list a limit outside 1..100 falls back to the default 20 rather
 * than being clamped; a bad offset is 0, and one past
 * MAX_OFFSET is MAX_OFFSET (an empty page: no database takes an offset of 1e400). The Resend
 * SDK's cursors are accepted as well: `after` or `before` an item's id.
 */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
export const MAX_OFFSET = 2 ** 31 - 1;
const MAX_CURSOR = 320;

const toInt = (value: unknown): number | null => {
  if (typeof value !== 'string' || !/^-?\d+$/.test(value.trim())) return null;
  return Number(value);
};

const cursor = (query: Record<string, unknown>, field: 'after' | 'before', ids: boolean): string | undefined => {
  const value = query[field];
  if (value === undefined || value === '') return undefined;
  // Ids and addresses hold no control characters; PostgreSQL refuses a NUL in a text parameter (a 500).
  if (
    typeof value !== 'string' ||
    value.length > MAX_CURSOR ||
    /[\u0000-\u001f\u007f]/.test(value) ||
    (ids && !isUuid(value))
  ) {
    throw validationError(field, 'must be the id of an item of the list (the last one of the previous page)');
  }
  return ids ? value.toLowerCase() : value;
};

/**
 * `keyset`: a list read by its items' ids (UUIDv7; the email lists, Resend's cursor lists):
 * a cursor that is not an id is refused, and a limit over 100 is clamped to 100 (SPEC
 * Pagination limits: "Keyset email list: limit clamped to 100"). `offset`: every other list.
 */
export function parsePage(query: Record<string, unknown>, kind: 'offset' | 'keyset' = 'offset'): ListPage {
  const ids = kind === 'keyset';
  let limit = toInt(query.limit);
  if (ids && limit !== null && limit > MAX_LIMIT) limit = MAX_LIMIT;
  const offset = toInt(query.offset);
  const after = cursor(query, 'after', ids);
  const before = cursor(query, 'before', ids);
  if (after !== undefined && before !== undefined) throw validationError('before', 'cannot be combined with after');
  return {
    limit: limit !== null && limit >= 1 && limit <= MAX_LIMIT ? limit : DEFAULT_LIMIT,
    offset: offset !== null && offset >= 0 ? Math.min(offset, MAX_OFFSET) : 0,
    ...(after !== undefined ? { after } : {}),
    ...(before !== undefined ? { before } : {}),
  };
}
