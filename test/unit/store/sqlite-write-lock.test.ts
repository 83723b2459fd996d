import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import { openStore, type Store } from '../../../src/store/infra/db.js';
import { SQLITE_MODULE } from '../../../src/store/infra/sqlite-driver.js';

/**
 * Delivery threads write the SQLite file through connections of their own. A transaction
 * that reads, then writes after another connection committed, must wait for the lock, not
 * fail with SQLITE_BUSY (it did, as a 500 on POST /v1/subscribers, while delivery ran).
 */
describe('SQLite transactions beside another writer', () => {
  let dir: string;
  let store: Store;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-lock-'));
    store = openStore(`sqlite:${join(dir, 'db.sqlite')}`);
    await sql`create table t (n integer)`.execute(store.db);
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a read-then-write transaction waits for the other connection instead of failing', async () => {
    let other: Promise<string> | undefined;
    await store.db.transaction().execute(async (trx) => {
      await sql`select count(*) from t`.execute(trx);
      // Another connection, on another thread, writes and commits now.
      const worker = new Worker(
        `const { workerData, parentPort } = require('node:worker_threads');
         const db = new (require(workerData.module))(workerData.file);
         db.pragma('busy_timeout = 5000');
         try { db.prepare('insert into t (n) values (2)').run(); parentPort.postMessage('written'); }
         catch (err) { parentPort.postMessage('failed: ' + err.code); }
         db.close();`,
        {
          eval: true,
          workerData: { module: createRequire(import.meta.url).resolve(SQLITE_MODULE), file: join(dir, 'db.sqlite') },
        },
      );
      other = new Promise((resolve) => worker.once('message', resolve));
      // Until it has written, or long enough to be sure it waits for this transaction.
      const early = await Promise.race([other, new Promise((r) => setTimeout(() => r(undefined), 500))]);
      assert.equal(early, undefined, 'the other connection waits while this transaction holds the write lock');
      await sql`insert into t (n) values (1)`.execute(trx);
    });
    assert.equal(await other, 'written', 'the other connection writes once this transaction committed');
    const rows = await sql<{ n: number }>`select n from t order by rowid`.execute(store.db);
    assert.deepEqual(
      rows.rows.map((r) => r.n),
      [1, 2],
    );
  });
});
