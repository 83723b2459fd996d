import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { CommitBatcher } from '../../src/store/infra/commit-batcher.js';
import { migrateToLatest, openStore, type Store } from '../../src/store/infra/db.js';
import { fileSyncer, writeScope } from '../../src/store/infra/wal-sync.js';

/**
 * SQLite commits do not fsync on the event loop; a caller that answers a client waits until
 * an fdatasync of the WAL that started after its commit has finished. The sync is observed
 * (and held) through the store's file-sync seam; the real one runs underneath.
 */
describe('SQLite: committed writes are on disk before their callers settle', () => {
  let dir: string;
  let store: Store;
  const syncs: Array<{ path: string; release: () => void }> = [];
  let hold = false;

  const fdatasyncFile = fileSyncer();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-durable-'));
    store = openStore(`sqlite:${join(dir, 'db.sqlite')}`, {
      fileSync: async (path) => {
        if (hold) await new Promise<void>((release) => syncs.push({ path, release }));
        await fdatasyncFile(path);
      },
    });
    await migrateToLatest(store);
  });
  after(async () => {
    hold = false;
    for (const s of syncs.splice(0)) s.release();
    await store.close();
    await fdatasyncFile.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const settled = async (p: Promise<unknown>) => {
    let done = false;
    void p.then(() => (done = true));
    // Turns of the event loop, not time: the write itself commits within a few.
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    return done;
  };

  it('commits with synchronous = NORMAL in WAL mode', async () => {
    const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(store.db);
    assert.equal(rows[0]!.synchronous, 1);
  });

  it('a batched write settles only after the WAL sync that followed its commit', async () => {
    hold = true;
    const batcher = new CommitBatcher(store.db, { windowMs: 0, durable: () => store.durable() });
    const write = batcher.run((trx) =>
      trx
        .insertInto('workspaces')
        .values({ id: 'ws-a', name: 'a', created_at: 1 } as never)
        .execute(),
    );
    assert.equal(await settled(write), false, 'not settled while the sync is held');
    // The row is committed (another reader sees it); only durability is awaited.
    const row = await store.db.selectFrom('workspaces').select('id').where('id', '=', 'ws-a').executeTakeFirst();
    assert.equal(row?.id, 'ws-a');
    assert.equal(syncs.length, 1);
    assert.match(syncs[0]!.path, /db\.sqlite-wal$/);
    hold = false;
    syncs.shift()!.release();
    await write;
  });

  it('writes made while a sync runs wait for the next one; with nothing new, durable() returns at once', async () => {
    hold = true;
    await store.db
      .insertInto('workspaces')
      .values({ id: 'ws-b', name: 'b', created_at: 1 } as never)
      .execute();
    const first = store.durable();
    await new Promise((r) => setImmediate(r));
    await store.db
      .insertInto('workspaces')
      .values({ id: 'ws-c', name: 'c', created_at: 1 } as never)
      .execute();
    const second = store.durable();
    await new Promise((r) => setImmediate(r));
    assert.equal(syncs.length, 1, 'one sync in flight');
    syncs.shift()!.release();
    await first;
    assert.equal(await settled(second), false, 'the second write needs a sync that started after it');
    assert.equal(syncs.length, 1, 'the next sync started once the first was done');
    hold = false;
    syncs.shift()!.release();
    await second;
    const before = syncs.length;
    await store.durable();
    assert.equal(syncs.length, before, 'no sync when nothing was written');
  });

  it('marks the scope a write ran in, and not the commit batcher’s flusher', async () => {
    const batcher = new CommitBatcher(store.db, { windowMs: 1, durable: () => store.durable() });
    const direct = { wrote: false };
    await writeScope.run(direct, () =>
      store.db
        .insertInto('workspaces')
        .values({ id: 'ws-d', name: 'd', created_at: 1 } as never)
        .execute(),
    );
    assert.equal(direct.wrote, true);
    const batched = { wrote: false };
    await writeScope.run(batched, () =>
      batcher.run((trx) =>
        trx
          .insertInto('workspaces')
          .values({ id: 'ws-e', name: 'e', created_at: 1 } as never)
          .execute(),
      ),
    );
    assert.equal(batched.wrote, false, 'the batcher made it durable itself');
    const read = { wrote: false };
    await writeScope.run(read, () => store.db.selectFrom('workspaces').selectAll().execute());
    assert.equal(read.wrote, false);
  });
});
