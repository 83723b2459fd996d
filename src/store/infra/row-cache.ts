import type PG from 'pg';

/**
 * Rows every request reads and that seldom change (API keys, workspaces, sending domains),
 * kept in memory on PostgreSQL, where each read is a network round trip (three of a send's
 * seven statements). Correct across nodes through the database itself: a trigger
 * (migration 0043) NOTIFYs `mailsvc_rows` with the table's name when any connection (another
 * node, the CLI) commits a change to one of them, and this node LISTENs; its own changes also
 * clear the table as soon as their statement has run. Nothing is cached while the listening
 * connection is down, so a missed notification can never leave a stale row. On SQLite, reads
 * are local and cost microseconds: no cache.
 */
type CachedTable = 'credentials' | 'workspaces' | 'domains';

export interface RowCache {
  /** `load()`, or the promise of an earlier call for the same key while nothing changed the table since. Misses (undefined) are not kept. */
  read<T>(table: CachedTable, key: string, load: () => Promise<T>): Promise<T>;
  /** Drops what is kept of `table`. */
  forget(table: string): void;
  close(): Promise<void>;
}

export const uncachedRows: RowCache = { read: (_table, _key, load) => load(), forget: () => {}, close: async () => {} };

/** Each caller gets rows of its own: one that changes a row it was given changes nobody else's. */
const copy = <T>(value: T): T =>
  (Array.isArray(value)
    ? value.map((row: object) => ({ ...row }))
    : value !== null && typeof value === 'object'
      ? { ...value }
      : value) as T;

const CHANGES_CHANNEL = 'mailsvc_rows';
/** Keys kept per table: beyond it the table starts over (workspaces and domains are few; keys can be many). */
const MAX_ENTRIES = 10_000;
/** How long after the listening connection failed it is opened again. */
const RETRY_MS = 1000;

export function listeningRowCache(connect: () => PG.Client): RowCache {
  const tables = new Map<string, Map<string, Promise<unknown>>>();
  let state: 'down' | 'connecting' | 'listening' | 'closed' = 'down';
  let client: PG.Client | null = null;
  let retryAt = 0;

  const forget = (table?: string) => (table === undefined ? tables.clear() : tables.get(table)?.clear());

  function listen(): void {
    if (state !== 'down' || Date.now() < retryAt) return;
    state = 'connecting';
    const c = connect();
    client = c;
    const down = () => {
      if (client !== c) return;
      client = null;
      forget();
      if (state !== 'closed') state = 'down';
      retryAt = Date.now() + RETRY_MS;
      c.end().catch(() => {});
    };
    c.on('error', down);
    c.on('end', down);
    c.on('notification', (n) => {
      if (n.channel === CHANGES_CHANNEL) forget(n.payload);
    });
    c.connect()
      .then(() => c.query(`listen ${CHANGES_CHANNEL}`))
      .then(() => {
        if (client === c && state === 'connecting') state = 'listening';
      }, down);
  }

  return {
    read<T>(table: CachedTable, key: string, load: () => Promise<T>): Promise<T> {
      if (state !== 'listening') {
        listen();
        return load();
      }
      let rows = tables.get(table);
      if (!rows) tables.set(table, (rows = new Map()));
      const kept = rows.get(key) as Promise<T> | undefined;
      if (kept) return kept.then(copy);
      if (rows.size >= MAX_ENTRIES) rows.clear();
      const loading = load();
      const entries = rows;
      // Kept before the query is sent: a change committed while it runs clears it again.
      entries.set(key, loading);
      loading.then(
        (value) => {
          if (value === undefined && entries.get(key) === loading) entries.delete(key);
        },
        () => {
          if (entries.get(key) === loading) entries.delete(key);
        },
      );
      return loading.then(copy);
    },
    forget,
    async close() {
      state = 'closed';
      forget();
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
