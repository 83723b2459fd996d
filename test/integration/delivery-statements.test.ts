import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { recordOutcomes } from '../../src/delivery/record-outcomes.js';
import type { RecipientResult } from '../../src/delivery/outcome.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createEnqueue } from '../../src/services/send/enqueue.js';
import { systemClock } from '../../src/shared/clock.js';
import { MemoryRateLimiter } from '../../src/shared/fixed-window.js';
import { createLogger } from '../../src/shared/logger.js';
import { CommitBatcher } from '../../src/store/infra/commit-batcher.js';
import { aggregateStatus } from '../../src/store/email-status.js';
import {
  listEmailsByIds,
  refreshEmailStatuses,
  saveEmail,
  type EmailStatus,
  type QueueStatus,
} from '../../src/store/emails.js';
import { watchFreeSpace } from '../../src/store/infra/free-space.js';
import { claimDueQueueItems } from '../../src/store/queue.js';
import type { Workspace } from '../../src/store/workspaces.js';
import { composeQueuedEmail } from '../helpers/mail.js';
import { createTestDatabase, testPostgresUrl } from '../helpers/postgres.js';

/**
 * What a message costs the database, in statements: on PostgreSQL each is a network round trip,
 * and their number per message is what held a PostgreSQL node to 0.39× an SQLite node (issue
 * 34). Counted through the real driver (Store.statements), for a batch handed in together, so
 * the figures are exact and load cannot change them: a batch costs a fixed number of statements
 * whatever its size. SQLite always; PostgreSQL when MAILSVC_TEST_POSTGRES names a server.
 */
const targets: Array<{ name: string; url: () => Promise<{ url: string; drop(): Promise<void> }> }> = [
  {
    name: 'sqlite',
    url: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'mailsvc-statements-'));
      return {
        url: `sqlite:${join(dir, 'db.sqlite')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];
if (testPostgresUrl()) targets.push({ name: 'postgres', url: () => createTestDatabase() });

const MESSAGES = 40;

for (const target of targets) {
  describe(`database statements per message on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let runtime: Runtime;
    let workspace: Workspace;
    const counted = async (work: () => Promise<unknown>): Promise<number> => {
      const before = runtime.store.statements();
      await work();
      return runtime.store.statements() - before;
    };

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
      workspace = await runtime.services.workspaces.ensureDefault();
    });
    after(async () => {
      await runtime.close();
      await db.drop();
    });

    it(`queues, claims and records ${MESSAGES} messages in a fixed number of statements, not a few per message`, async () => {
      const { db: store, dialect } = runtime.store;
      const now = Date.now() - 1000;
      // The send path's own door, its commits grouped by a batcher whose window holds every request.
      const enqueue = createEnqueue({
        clock: systemClock,
        rateLimiter: new MemoryRateLimiter(),
        batcher: new CommitBatcher(store, { windowMs: 200 }),
        space: watchFreeSpace([tmpdir()], 0),
      });
      const prepared = await Promise.all(
        Array.from({ length: MESSAGES }, (_, i) =>
          composeQueuedEmail(store, { workspaceId: workspace.id, domain: 'sender.test', to: [`r${i}@dest.test`], now }),
        ),
      );
      // begin, the emails, their contents, their queue rows, commit.
      const queued = await counted(() => Promise.all(prepared.map((p) => enqueue(workspace, [p]))));
      assert.ok(queued <= 5, `queueing ${MESSAGES} messages took ${queued} statements`);

      let claimed: Awaited<ReturnType<typeof claimDueQueueItems>> = [];
      const lease = { owner: 'statements', now: Date.now(), until: Date.now() + 60_000 };
      // begin, the claim (and on SQLite the emails' `sending`), commit.
      const claim = await counted(
        async () =>
          (claimed = await store.transaction().execute((trx) => claimDueQueueItems(trx, dialect, lease, 1000))),
      );
      assert.equal(claimed.length, MESSAGES);
      assert.ok(claim <= (dialect === 'postgres' ? 3 : 4), `claiming ${MESSAGES} rows took ${claim} statements`);
      const emails = new Map(
        (
          await listEmailsByIds(
            store,
            claimed.map((c) => c.email_id),
          )
        ).map((e) => [e.id, e]),
      );
      assert.ok([...emails.values()].every((e) => e.status === 'sending'));

      const results: RecipientResult[] = claimed.map((item) => ({
        email: emails.get(item.email_id)!,
        item,
        outcome: {
          kind: 'delivered',
          code: 250,
          response: '250 2.0.0 queued',
          mxHost: 'mx.dest.test',
          tls: true,
          relayed: false,
        },
        startedAt: lease.now,
        durationMs: 3,
      }));
      const ctx = { owner: lease.owner, now: Date.now(), retrySchedule: [60], maxQueueLifetime: 86_400 };
      // begin, the rows' outcomes, the attempts, the events, the webhook endpoints, the emails' statuses, commit.
      const recorded = await counted(() => store.transaction().execute((trx) => recordOutcomes(trx, results, ctx)));
      assert.ok(recorded <= 7, `recording ${MESSAGES} results took ${recorded} statements`);

      const after = await listEmailsByIds(store, [...emails.keys()]);
      assert.deepEqual(new Set(after.map((e) => e.status)), new Set(['delivered']));
      const attempts = await store
        .selectFrom('delivery_attempts')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(attempts.n), MESSAGES);
      const perMessage = (queued + claim + recorded) / MESSAGES;
      assert.ok(perMessage <= 0.4, `${perMessage} statements per message`);
    });

    it('sets each email the status its recipients give it, as aggregateStatus does', async () => {
      const { db: store } = runtime.store;
      const now = Date.now();
      const cases: Array<[QueueStatus[], boolean]> = [
        [['queued'], false],
        [['queued'], true],
        [['queued', 'sending'], false],
        [['delivered', 'deferred'], false],
        [['held', 'delivered'], false],
        [['held', 'queued'], false],
        [['bounced', 'suppressed'], false],
        [['failed', 'cancelled'], false],
        [['cancelled', 'cancelled'], false],
        [['delivered', 'bounced', 'failed'], false],
      ];
      const ids: string[] = [];
      for (const [states, scheduled] of cases) {
        const email = await composeQueuedEmail(store, {
          workspaceId: workspace.id,
          domain: 'sender.test',
          to: states.map((_, i) => `s${i}@dest.test`),
          now,
        });
        email.email.scheduled_at = scheduled ? now + 3_600_000 : null;
        email.recipients.forEach((r, i) => (r.status = states[i]!));
        await store.transaction().execute((trx) => saveEmail(trx, email));
        ids.push(email.email.id);
      }
      await refreshEmailStatuses(store, ids, now);
      const byId = new Map((await listEmailsByIds(store, ids)).map((e) => [e.id, e.status]));
      const expected: EmailStatus[] = cases.map(([states, scheduled]) => aggregateStatus(states, scheduled));
      assert.deepEqual(
        ids.map((id) => byId.get(id)),
        expected,
      );
    });
  });
}
