import type { Database as SqliteDb, Statement } from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/**
 * The subset of better-sqlite3 that kysely's SQLite dialect uses, with prepared statements
 * kept and reused: kysely prepares every query anew, and preparing costs about as much as
 * running a small indexed query. The cache holds the `size` most recently used statements; a
 * statement still busy (a streamed query being read) is not handed out twice.
 */
export function withStatementCache(sqlite: SqliteDb, size = 500): SqliteDatabase {
  const cache = new Map<string, Statement>();
  return {
    close: () => {
      cache.clear();
      sqlite.close();
    },
    prepare(sql: string) {
      const cached = cache.get(sql);
      if (cached && !cached.busy) {
        // Refresh its place in the recency order.
        cache.delete(sql);
        cache.set(sql, cached);
        return cached;
      }
      const statement = sqlite.prepare(sql);
      if (!cached) {
        cache.set(sql, statement);
        if (cache.size > size) cache.delete(cache.keys().next().value!);
      }
      return statement;
    },
  };
}
