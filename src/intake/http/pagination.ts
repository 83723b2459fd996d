import type { ListPage } from '../../store/infra/list-page.js';

/**
 * An offset list in the SPEC's shape (the resource-named array and `pagination`), with the
 * Resend shape beside it: `object: "list"`, `data` (the same items) and `has_more`.
 */
export function offsetList<K extends string, T>(key: K, items: T[], total: number, page: ListPage, more: boolean) {
  return {
    [key]: items,
    pagination: { total, limit: page.limit, offset: page.offset, has_more: more },
    object: 'list',
    has_more: more,
    data: items,
  } as { [P in K]: T[] } & {
    pagination: { total: number; limit: number; offset: number; has_more: boolean };
    object: 'list';
    has_more: boolean;
    data: T[];
  };
}

/** A list in Resend's shape only (the routes Resend defines and the SPEC does not). */
export const cursorList = <T>(items: T[], more: boolean) => ({ object: 'list' as const, has_more: more, data: items });
