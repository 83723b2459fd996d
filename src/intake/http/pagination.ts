/**
 * Offset pagination shared by every offset list (SPEC Pagination): a limit outside 1..100
 * falls back to the default 20 rather than being clamped; a bad offset is 0, and one past
 * MAX_OFFSET is MAX_OFFSET (an empty page: no database takes an offset of 1e400).
 */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
export const MAX_OFFSET = 2 ** 31 - 1;

export interface Page {
  limit: number;
  offset: number;
}

const toInt = (value: unknown): number | null => {
  if (typeof value !== 'string' || !/^-?\d+$/.test(value.trim())) return null;
  return Number(value);
};

export function parsePage(query: Record<string, unknown>): Page {
  const limit = toInt(query.limit);
  const offset = toInt(query.offset);
  return {
    limit: limit !== null && limit >= 1 && limit <= MAX_LIMIT ? limit : DEFAULT_LIMIT,
    offset: offset !== null && offset >= 0 ? Math.min(offset, MAX_OFFSET) : 0,
  };
}

export function offsetList<K extends string, T>(key: K, items: T[], total: number, page: Page) {
  return {
    [key]: items,
    pagination: { total, limit: page.limit, offset: page.offset, has_more: page.offset + items.length < total },
  } as { [P in K]: T[] } & { pagination: { total: number; limit: number; offset: number; has_more: boolean } };
}
