import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SQLite } from '../../../src/store/infra/sqlite-driver.js';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { Collector, CommitBatcher } from '../../../src/store/infra/commit-batcher.js';
import type { Db } from '../../../src/store/infra/db.js';

const memoryDb = (): Db =>
  new Kysely({ dialect: new SqliteDialect({ database: new SQLite(':memory:') }) }) as unknown as Db;

describe('Collector', () => {
  it('writes the items of concurrent callers together, in one transaction', async () => {
    const db = memoryDb();
    await sql`create table t (n integer not null check (n >= 0))`.execute(db);
    const batches: number[][] = [];
    const collector = new Collector<number>(
      new CommitBatcher(db),
      async (trx, items) => {
        batches.push(items);
        for (const n of items) await sql`insert into t (n) values (${n})`.execute(trx);
      },
      { windowMs: 0, max: 256 },
    );
    await Promise.all([1, 2, 3, 4].map((n) => collector.add(n)));
    assert.deepEqual(batches, [[1, 2, 3, 4]]);
    await db.destroy();
  });

  it('waits its window for company, and a failing item fails alone', async () => {
    const db = memoryDb();
    await sql`create table t (n integer not null check (n >= 0))`.execute(db);
    const batches: number[][] = [];
    const collector = new Collector<number>(
      new CommitBatcher(db),
      async (trx, items) => {
        batches.push(items);
        for (const n of items) await sql`insert into t (n) values (${n})`.execute(trx);
      },
      { windowMs: 20, max: 256 },
    );
    const first = collector.add(1);
    await new Promise((r) => setTimeout(r, 5));
    const results = await Promise.allSettled([first, collector.add(-1), collector.add(3)]);
    assert.deepEqual(batches[0], [1, -1, 3], 'items added within the window share a batch');
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    const rows = await sql<{ n: number }>`select n from t order by n`.execute(db);
    assert.deepEqual(
      rows.rows.map((r) => r.n),
      [1, 3],
    );
    await db.destroy();
  });

  it('writes at once when `max` items are in, without waiting its window', async () => {
    const db = memoryDb();
    await sql`create table t (n integer not null)`.execute(db);
    const batches: number[][] = [];
    const collector = new Collector<number>(new CommitBatcher(db), async (trx, items) => void batches.push(items), {
      windowMs: 60_000,
      max: 2,
    });
    await Promise.all([collector.add(1), collector.add(2)]);
    assert.deepEqual(batches, [[1, 2]]);
    await db.destroy();
  });
});
