import type { SelectQueryBuilder } from 'kysely';

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
 * Reads one page of `query`, ordered newest first by `column` (ids are UUIDv7, so they sort
 * by creation time). One row more than asked is read to know whether there are more.
 */
export async function readPage<T>(query: SelectQueryBuilder<any, any, T>, column: string, page: ListPage): Promise<PageOf<T>> {
  // The column is the caller's literal; kysely cannot type a column passed as a string.
  const q = query as SelectQueryBuilder<any, any, T>;
  if (page.before !== undefined) {
    const rows = await q.where(column, '>', page.before).orderBy(column, 'asc').limit(page.limit + 1).execute();
    return { rows: rows.slice(0, page.limit).reverse(), more: rows.length > page.limit };
  }
  const from = page.after !== undefined ? q.where(column, '<', page.after) : q;
  const rows = await from
    .orderBy(column, 'desc')
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
  const q = query as SelectQueryBuilder<any, any, T>;
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
  const from = page.after !== undefined ? q.where((eb) => eb.or([eb(time, '<', cursorTime), eb.and([eb(time, '=', cursorTime), eb(key, '<', page.after)])])) : q;
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
