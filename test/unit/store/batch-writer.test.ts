import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { BatchWriter } from '../../../src/store/batch-writer.js';
import type { Db } from '../../../src/store/db.js';

const memoryDb = (): Db => new Kysely({ dialect: new SqliteDialect({ database: new SQLite(':memory:') }) }) as unknown as Db;

describe('BatchWriter', () => {
  it('writes the items of concurrent callers together, in one transaction', async () => {
    const db = memoryDb();
    await sql`create table t (n integer not null check (n >= 0))`.execute(db);
    const batches: number[][] = [];
    const writer = new BatchWriter<number>(db, async (trx, items) => {
      batches.push(items);
      for (const n of items) await sql`insert into t (n) values (${n})`.execute(trx);
    });
    await Promise.all([1, 2, 3, 4].map((n) => writer.add(n)));
    assert.deepEqual(batches, [[1, 2, 3, 4]]);
    await db.destroy();
  });

  it('waits its window for company, and a failing item fails alone', async () => {
    const db = memoryDb();
    await sql`create table t (n integer not null check (n >= 0))`.execute(db);
    const batches: number[][] = [];
    const writer = new BatchWriter<number>(
      db,
      async (trx, items) => {
        batches.push(items);
        for (const n of items) await sql`insert into t (n) values (${n})`.execute(trx);
      },
      256,
      20,
    );
    const first = writer.add(1);
    await new Promise((r) => setTimeout(r, 5));
    const results = await Promise.allSettled([first, writer.add(-1), writer.add(3)]);
    assert.deepEqual(batches[0], [1, -1, 3], 'items added within the window share a batch');
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    const rows = await sql<{ n: number }>`select n from t order by n`.execute(db);
    assert.deepEqual(rows.rows.map((r) => r.n), [1, 3]);
    await db.destroy();
  });
});
