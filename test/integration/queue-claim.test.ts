import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { openStore, type Store } from '../../src/store/infra/db.js';
import type { Db } from '../../src/store/infra/db.js';
import { claimDueQueueItems as claimIn, finishQueueItems } from '../../src/store/queue.js';
import { queueEmail } from '../helpers/mail.js';
import { createTestDatabase, testPostgresUrl } from '../helpers/postgres.js';

/**
 * The queue claim on every database: SQLite always, and PostgreSQL (FOR UPDATE SKIP LOCKED)
 * when MAILSVC_TEST_POSTGRES names a server (e.g. postgres://postgres@127.0.0.1:5432/test).
 */
const targets: Array<{ name: string; url: () => Promise<{ url: string; drop(): Promise<void> }> }> = [
  {
    name: 'sqlite',
    url: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'mailsvc-claim-'));
      return {
        url: `sqlite:${join(dir, 'db.sqlite')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];
if (testPostgresUrl()) targets.push({ name: 'postgres', url: () => createTestDatabase() });

interface ClaimOptions {
  owner: string;
  now: number;
  leaseUntil: number;
  limit: number;
  excludeDomains?: string[];
}
const claimDueQueueItems = (db: Db, dialect: 'sqlite' | 'postgres', o: ClaimOptions) =>
  db
    .transaction()
    .execute((trx) =>
      claimIn(trx, dialect, { owner: o.owner, now: o.now, until: o.leaseUntil }, o.limit, o.excludeDomains),
    );

for (const target of targets) {
  describe(`queue claims on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let runtime: Runtime;
    let other: Store;
    let workspaceId: string;

    before(async () => {
      db = await target.url();
      runtime = await openRuntime(
        loadConfig({
          env: {},
          overrides: { database: db.url, dataDir: tmpdir(), secretKey: Buffer.alloc(32, 1).toString('base64') },
        }),
        {
          logger: createLogger('silent'),
        },
      );
      // On PostgreSQL a second pool, as a second node would have. On SQLite one process has one
      // connection (better-sqlite3 waits synchronously on a lock, so two in one process would
      // block each other); other processes share the file the same way, through its lock.
      other = target.name === 'postgres' ? openStore(db.url) : runtime.store;
      workspaceId = (await runtime.services.workspaces.ensureDefault()).id;
    });
    after(async () => {
      if (other !== runtime.store) await other.close();
      await runtime.close();
      await db.drop();
    });

    it('gives concurrent claimers disjoint rows, transactional first', async () => {
      const now = Date.now() - 1000;
      for (let i = 0; i < 20; i++) {
        await queueEmail(runtime.store.db, {
          workspaceId,
          domain: 'sender.test',
          to: Array.from({ length: 10 }, (_, j) => `m${i}-${j}@dest.test`),
          type: 'marketing',
          now,
        });
      }
      const urgent = await queueEmail(runtime.store.db, {
        workspaceId,
        domain: 'sender.test',
        to: ['urgent@dest.test'],
        now,
      });
      const dialect = runtime.store.dialect;
      const at = Date.now();
      const [a, b, c] = await Promise.all([
        claimDueQueueItems(runtime.store.db, dialect, { owner: 'a', now: at, leaseUntil: at + 60_000, limit: 90 }),
        claimDueQueueItems(other.db, dialect, { owner: 'b', now: at, leaseUntil: at + 60_000, limit: 90 }),
        claimDueQueueItems(other.db, dialect, { owner: 'c', now: at, leaseUntil: at + 60_000, limit: 90 }),
      ]);
      const ids = [...a, ...b, ...c].map((r) => r.id);
      assert.equal(new Set(ids).size, ids.length, 'no row claimed twice');
      assert.equal(ids.length, 201, 'every due row claimed once');
      const first = [a, b, c].find((batch) => batch.some((r) => r.email_id === urgent.id));
      assert.equal(first?.[0]?.email_id, urgent.id, 'the transactional row heads its batch');
      const email = await runtime.store.db
        .selectFrom('emails')
        .select('status')
        .where('id', '=', urgent.id)
        .executeTakeFirstOrThrow();
      assert.equal(email.status, 'sending');
      const none = await claimDueQueueItems(runtime.store.db, dialect, {
        owner: 'd',
        now: at,
        leaseUntil: at + 60_000,
        limit: 10,
      });
      assert.equal(none.length, 0, 'leased rows are not claimed again');
    });

    it('lets another worker take rows whose lease expired; the old holder can no longer write them', async () => {
      const dialect = runtime.store.dialect;
      const later = Date.now() + 120_000;
      const taken = await claimDueQueueItems(other.db, dialect, {
        owner: 'e',
        now: later,
        leaseUntil: later + 60_000,
        limit: 1000,
      });
      assert.equal(taken.length, 201, 'expired leases are reclaimed');
      const outcome = { status: 'delivered' as const, attempted: true, code: 250, response: '250 ok', finished: true };
      const stale = await finishQueueItems(runtime.store.db, 'a', [{ id: taken[0]!.id, ...outcome }], later);
      assert.equal(stale.size, 0, 'the first holder lost the row');
      // One statement for several rows: only those the writer holds are written.
      const fresh = await finishQueueItems(
        other.db,
        'e',
        [
          { id: taken[0]!.id, ...outcome },
          {
            id: taken[1]!.id,
            ...outcome,
            status: 'deferred',
            nextAttemptAt: later + 60_000,
            code: 451,
            finished: false,
          },
          { id: 'not-a-row', ...outcome },
        ],
        later,
      );
      assert.deepEqual([...fresh].sort(), [taken[0]!.id, taken[1]!.id].sort());
      const rows = await other.db
        .selectFrom('queue_items')
        .selectAll()
        .where('id', 'in', [taken[0]!.id, taken[1]!.id])
        .execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.equal(byId.get(taken[0]!.id)!.status, 'delivered');
      assert.equal(byId.get(taken[0]!.id)!.finished_at, later);
      assert.equal(byId.get(taken[1]!.id)!.status, 'deferred');
      assert.equal(byId.get(taken[1]!.id)!.next_attempt_at, later + 60_000);
      assert.equal(byId.get(taken[1]!.id)!.last_code, 451);
      assert.equal(byId.get(taken[1]!.id)!.finished_at, null);
      assert.equal(byId.get(taken[1]!.id)!.lease_owner, null);
      assert.equal(byId.get(taken[1]!.id)!.attempts, taken[1]!.attempts + 1);
    });

    it('takes due rows oldest first across queued and deferred; leaves rows not yet due and excluded domains', async () => {
      const dialect = runtime.store.dialect;
      // The rows of the tests above are done with: only this test's rows are in play.
      await runtime.store.db.updateTable('queue_items').set({ status: 'delivered', lease_owner: null }).execute();
      const base = Date.now();
      const email = await queueEmail(runtime.store.db, {
        workspaceId,
        domain: 'sender.test',
        to: ['d1@order.test', 'q1@order.test', 'd2@order.test', 'late@order.test', 'x@skip.test'],
        type: 'marketing',
        now: base,
      });
      const rows = await runtime.store.db
        .selectFrom('queue_items')
        .select(['id', 'recipient'])
        .where('email_id', '=', email.id)
        .execute();
      const id = (recipient: string) => rows.find((r) => r.recipient === recipient)!.id;
      const set = (recipient: string, status: 'queued' | 'deferred', at: number) =>
        runtime.store.db
          .updateTable('queue_items')
          .set({ status, next_attempt_at: at })
          .where('id', '=', id(recipient))
          .execute();
      await set('d1@order.test', 'deferred', base + 1);
      await set('q1@order.test', 'queued', base + 2);
      await set('d2@order.test', 'deferred', base + 3);
      await set('late@order.test', 'queued', base + 60_000);
      await set('x@skip.test', 'queued', base);
      const at = base + 10;
      const first = await claimDueQueueItems(runtime.store.db, dialect, {
        owner: 'o1',
        now: at,
        leaseUntil: at + 60_000,
        limit: 2,
        excludeDomains: ['skip.test'],
      });
      assert.deepEqual(
        first.map((r) => r.recipient),
        ['d1@order.test', 'q1@order.test'],
      );
      const rest = await claimDueQueueItems(runtime.store.db, dialect, {
        owner: 'o2',
        now: at,
        leaseUntil: at + 60_000,
        limit: 10,
        excludeDomains: ['skip.test'],
      });
      assert.deepEqual(
        rest.map((r) => r.recipient),
        ['d2@order.test'],
        'not yet due and excluded rows stay',
      );
      const skipped = await claimDueQueueItems(runtime.store.db, dialect, {
        owner: 'o3',
        now: at,
        leaseUntil: at + 60_000,
        limit: 10,
      });
      assert.deepEqual(
        skipped.map((r) => r.recipient),
        ['x@skip.test'],
      );
    });
  });
}
