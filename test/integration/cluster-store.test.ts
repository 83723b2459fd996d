import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { DatabaseRateLimiter } from '../../src/store/rate-limits.js';
import type { Limit } from '../../src/shared/fixed-window.js';
import { runRetention } from '../../src/tasks/retention.js';
import { manualClock } from '../helpers/server.js';
import { migrateToLatest, openStore, type Store } from '../../src/store/infra/db.js';
import { runAsLeader } from '../../src/store/infra/leader-lock.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';

/**
 * What several nodes agree on through the database: rate-limit windows, leader-only jobs,
 * retention. SQLite always; PostgreSQL when MAILSVC_TEST_POSTGRES is set. Two stores on one
 * database stand for two nodes.
 */
const targets: Array<{ name: string; open: () => Promise<TestDatabase> }> = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'mailsvc-cluster-'));
      return {
        url: `sqlite:${join(dir, 'db.sqlite')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];
if (testPostgresUrl()) targets.push({ name: 'postgres', open: () => createTestDatabase() });

const DAY = 24 * 3600 * 1000;

for (const target of targets) {
  describe(`cluster state on ${target.name}`, () => {
    let database: TestDatabase;
    let a: Store;
    let b: Store;

    before(async () => {
      database = await target.open();
      a = openStore(database.url);
      const { error } = await migrateToLatest(a);
      assert.equal(error, undefined);
      b = openStore(database.url);
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await database?.drop();
    });

    it('counts hits from two nodes against one fixed window and refuses past the limit without counting', async () => {
      const limit: Limit = { limit: 10, windowMs: 1000, soft: false };
      const now = 9_000_000_000_500;
      const nodes = [new DatabaseRateLimiter(a.db), new DatabaseRateLimiter(b.db)];
      const decisions = await Promise.all(
        Array.from({ length: 16 }, (_, i) => nodes[i % 2]!.hit('ws:1:api', limit, now)),
      );
      assert.equal(decisions.filter((d) => d.allowed).length, 10);
      assert.deepEqual(
        decisions
          .filter((d) => d.allowed)
          .map((d) => d.remaining)
          .sort((x, y) => x - y),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        'every allowed hit saw its own count',
      );
      const refused = decisions.find((d) => !d.allowed)!;
      assert.equal(refused.resetAt, 9_000_000_001_000);
      assert.equal((await nodes[1]!.peek('ws:1:api', limit, now)).remaining, 0);
      // A batch bigger than what is left is refused whole; the next window starts empty.
      assert.equal((await nodes[0]!.hit('ws:1:api', limit, now + 500, 3)).allowed, true);
      assert.equal((await nodes[0]!.hit('ws:1:api', limit, now + 500, 11)).allowed, false);
      assert.equal((await nodes[0]!.peek('ws:1:api', limit, now + 500)).remaining, 7);
    });

    it('counts soft hits past the limit', async () => {
      const limit: Limit = { limit: 2, windowMs: 1000, soft: true };
      const node = new DatabaseRateLimiter(a.db);
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await node.hit('ws:soft', limit, 9_500_000_000_000));
      assert.deepEqual(
        results.map((d) => d.allowed),
        [true, true, false, false],
      );
    });

    it('runs a leader-only job on one node at a time', async () => {
      let release: () => void = () => {};
      const held = new Promise<void>((r) => (release = r));
      let started: () => void = () => {};
      const running = new Promise<void>((r) => (started = r));
      const first = runAsLeader(a, 'test-job', async () => {
        started();
        await held;
      });
      await running;
      const second = await runAsLeader(b, 'test-job', async () => {});
      // SQLite has a single node, which always leads.
      assert.equal(second, target.name === 'sqlite');
      release();
      assert.equal(await first, true);
      assert.equal(await runAsLeader(b, 'test-job', async () => {}), true, 'free again once the first run ended');
    });

    it('deletes idempotency keys after 24 h and attempts and events after retention.days', async () => {
      const clock = manualClock(100 * DAY);
      const now = clock.now();
      const config = loadConfig({ env: {}, overrides: { retention: { days: 30 } } });
      await a.db.insertInto('workspaces').values(workspaceRow('ws_r')).execute();
      const key = (key: string, createdAt: number, state: 'done' | 'in_flight', lockedUntil: number) => ({
        workspace_id: 'ws_r',
        key,
        request_hash: 'h',
        state,
        response_status: null,
        response_body: null,
        created_at: createdAt,
        locked_until: lockedUntil,
      });
      await a.db
        .insertInto('idempotency_keys')
        .values([
          key('old', now - DAY - 1, 'done', 0),
          key('fresh', now - DAY + 60_000, 'done', 0),
          key('old-running', now - DAY - 1, 'in_flight', now + 60_000),
        ])
        .execute();
      const event = (id: string, createdAt: number) => ({
        id,
        workspace_id: 'ws_r',
        type: 'email.sent',
        email_id: null,
        data: '{}',
        created_at: createdAt,
      });
      await a.db
        .insertInto('events')
        .values([event('evt_old', now - 31 * DAY), event('evt_new', now - 29 * DAY)])
        .execute();
      await a.db
        .insertInto('rate_limit_windows')
        .values([{ key: 'k', window_start: now - 2000, count: 1, expires_at: now - 1000 }])
        .execute();
      const apiLog = (id: string, createdAt: number) => ({
        id,
        workspace_id: 'ws_r',
        credential_id: null,
        request_id: null,
        method: 'GET',
        endpoint: '/v1/emails',
        response_status: 200,
        user_agent: null,
        request_body: null,
        response_body: null,
        created_at: createdAt,
      });
      await a.db
        .insertInto('api_logs')
        .values([apiLog('log_old', now - 31 * DAY), apiLog('log_new', now - 29 * DAY)])
        .execute();

      const report = await runRetention({ db: b.db, clock, config });
      assert.deepEqual(report, {
        idempotencyKeys: 1,
        deliveryAttempts: 0,
        events: 1,
        receivedEmails: 0,
        rateLimitWindows: 1,
        workflowRuns: 0,
        apiLogs: 1,
        deliverabilityReports: 0,
        hourlyStats: 0,
        warmupCounts: 0,
        importFiles: 0,
        auditEntries: 0,
        oauthModels: 0,
      });
      assert.deepEqual(
        (await a.db.selectFrom('api_logs').select('id').execute()).map((r) => r.id),
        ['log_new'],
      );
      const keys = await a.db.selectFrom('idempotency_keys').select('key').orderBy('key').execute();
      assert.deepEqual(
        keys.map((k) => k.key),
        ['fresh', 'old-running'],
      );
      const events = await a.db.selectFrom('events').select('id').execute();
      assert.deepEqual(
        events.map((e) => e.id),
        ['evt_new'],
      );
    });
  });
}

function workspaceRow(id: string) {
  return {
    id,
    name: id,
    plan: 'starter' as const,
    transactional_per_second: null,
    marketing_per_second: null,
    default_from_email: null,
    created_at: 0,
  };
}
