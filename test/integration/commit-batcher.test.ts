import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CommitBatcher } from '../../src/store/infra/commit-batcher.js';
import { migrateToLatest, openStore, type Store } from '../../src/store/infra/db.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';

const targets: Array<{ name: string; open: () => Promise<TestDatabase> }> = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'mailsvc-batcher-'));
      return {
        url: `sqlite:${join(dir, 'db.sqlite')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];
if (testPostgresUrl()) targets.push({ name: 'postgres', open: () => createTestDatabase() });

const workspace = (id: string) => ({
  id,
  name: id,
  plan: 'starter' as const,
  transactional_per_second: null,
  marketing_per_second: null,
  default_from_email: null,
  created_at: 0,
});

for (const target of targets) {
  describe(`group commit on ${target.name}`, () => {
    let database: TestDatabase;
    let store: Store;
    before(async () => {
      database = await target.open();
      store = openStore(database.url);
      assert.equal((await migrateToLatest(store)).error, undefined);
    });
    after(async () => {
      await store?.close();
      await database?.drop();
    });

    it('commits concurrent writes, and one failing write does not fail its neighbours', async () => {
      const batcher = new CommitBatcher(store.db, {
        windowMs: 2,
        maxBatch: 256,
        concurrency: target.name === 'postgres' ? 4 : 1,
      });
      const ids = Array.from({ length: 50 }, (_, i) => `ws_${target.name}_${i}`);
      const results = await Promise.allSettled([
        ...ids.map((id) =>
          batcher.run(async (trx) => (await trx.insertInto('workspaces').values(workspace(id)).execute(), id)),
        ),
        // A duplicate primary key: its batch rolls back, and every other write is retried alone.
        batcher.run((trx) => trx.insertInto('workspaces').values(workspace(ids[0]!)).execute()),
      ]);
      assert.deepEqual(
        results.slice(0, 50).map((r) => (r.status === 'fulfilled' ? r.value : r.reason)),
        ids,
      );
      assert.equal(results[50]!.status, 'rejected');
      const rows = await store.db
        .selectFrom('workspaces')
        .select('id')
        .where('id', 'like', `ws_${target.name}_%`)
        .execute();
      assert.equal(rows.length, 50);
    });

    it(
      'commits batches side by side on PostgreSQL',
      { skip: target.name === 'postgres' ? false : 'SQLite has one writer', timeout: 10_000 },
      async () => {
        const batcher = new CommitBatcher(store.db, { windowMs: 0, maxBatch: 1, concurrency: 2 });
        // The first write waits inside its transaction until the second one runs: with one
        // batch at a time this would never finish.
        let secondStarted: () => void = () => {};
        const started = new Promise<void>((r) => (secondStarted = r));
        const first = batcher.run(async (trx) => {
          await started;
          await trx.insertInto('workspaces').values(workspace('ws_side_1')).execute();
        });
        const second = batcher.run(async (trx) => {
          secondStarted();
          await trx.insertInto('workspaces').values(workspace('ws_side_2')).execute();
        });
        await Promise.all([first, second]);
        const rows = await store.db.selectFrom('workspaces').select('id').where('id', 'like', 'ws_side_%').execute();
        assert.equal(rows.length, 2);
      },
    );
  });
}
