import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Store } from './db.js';

/**
 * Runs `job` only if no other node is running the job of the same name: a PostgreSQL session
 * advisory lock, held on one pooled connection for the length of the run. The server frees it
 * if the node dies, so a crashed leader never blocks the others. SQLite has one node: it
 * always runs. Returns whether the job ran.
 */
export async function runAsLeader(store: Store, name: string, job: () => Promise<unknown>): Promise<boolean> {
  if (store.dialect !== 'postgres') {
    await job();
    return true;
  }
  const key = lockKey(name);
  return store.db.connection().execute(async (conn) => {
    const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${key}::bigint) as locked`.execute(
      conn,
    );
    if (!rows[0]?.locked) return false;
    try {
      await job();
      return true;
    } finally {
      await sql`select pg_advisory_unlock(${key}::bigint)`.execute(conn);
    }
  });
}

/** A stable 63-bit key per job name, so every node and version agrees on it. */
function lockKey(name: string): string {
  return BigInt.asIntN(
    64,
    BigInt('0x' + createHash('sha256').update(`mailsvc:${name}`).digest('hex').slice(0, 16)),
  ).toString();
}
