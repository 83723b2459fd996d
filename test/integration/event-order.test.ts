import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Migrator } from 'kysely';
import { recordEvents } from '../../src/events/record-event.js';
import { migrateToLatest, openStore } from '../../src/store/infra/db.js';
import { listEmailEvents } from '../../src/store/events.js';
import { migrations } from '../../src/store/infra/migrations/index.js';
import { eventually } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Events come back in the order they were written, whatever their timestamps: a simulated
 * complaint writes sent, delivered and complained in one millisecond, and random event ids
 * used to decide their order. On SQLite and (MAILSVC_TEST_POSTGRES) PostgreSQL.
 */
describe('event order', () => {
  let dns: TestDns;
  let server: TestServer;
  let key: string;

  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({
      delivery: { enabled: true, dnsServers: [dns.server], pollInterval: 20, signingThreads: 0 },
    });
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'order.test' });
    key = await server.key({ test: true });
  });
  after(async () => {
    await server?.close();
    await dns?.close();
  });

  it('a simulated complaint lists sent, delivered, complained, and its last event is the complaint', async () => {
    const sent = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'a@order.test', to: 'complained@simulator.mailsvc.dev', subject: 'order', text: 'x' },
    });
    assert.equal(sent.status, 200, show(sent));
    const id = sent.body.id as string;
    const events = await eventually(async () => {
      const res = await request(server.httpUrl, 'GET', `/v1/emails/${id}/events`, { key });
      return res.body.events.length === 3 ? (res.body.events as Array<{ type: string; created_at: string }>) : null;
    });
    assert.deepEqual(
      events.map((e) => e.type),
      ['email.sent', 'email.delivered', 'email.complained'],
    );
    assert.equal(new Set(events.map((e) => e.created_at)).size, 1, 'all three carry the same time');

    const detail = await request(server.httpUrl, 'GET', `/v1/emails/${id}`, { key });
    assert.equal(detail.body.status, 'delivered');
    assert.equal(detail.body.last_event, 'complained');
    const list = await request(server.httpUrl, 'GET', `/v1/emails?q=${id}`, { key });
    assert.equal(list.status, 200, show(list));
    assert.deepEqual(
      list.body.data.map((e: { id: string; last_event: string }) => [e.id, e.last_event]),
      [[id, 'complained']],
    );
  });

  it('events of one millisecond, in one transaction and in several, come back in the order written', async () => {
    const db = server.runtime.store.db;
    const at = Date.now();
    const emailId = '00000000-0000-7000-8000-00000000e0e0';
    const types = [
      'email.sent',
      'email.delivered',
      'email.opened',
      'email.clicked',
      'email.complained',
      'email.bounced',
    ] as const;
    const event = (type: (typeof types)[number]) => ({ workspaceId: server.workspaceId, type, emailId, at, data: {} });
    await db.transaction().execute((trx) => recordEvents(trx, types.slice(0, 3).map(event)));
    for (const type of types.slice(3)) await db.transaction().execute((trx) => recordEvents(trx, [event(type)]));
    const listed = await listEmailEvents(db, server.workspaceId, emailId);
    assert.deepEqual(
      listed.map((e) => e.type),
      [...types],
    );
    assert.ok(listed.every((e) => e.created_at === at));
  });
});

describe('migrations 0020 and 0021: existing events get their order and keep their deliveries; statistics stay live', () => {
  let dir: string;
  let pg: TestDatabase | null = null;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-order-'));
    pg = testPostgresUrl() ? await createTestDatabase() : null;
  });
  after(async () => {
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('numbers the events of an older database and leaves webhook deliveries in place', async () => {
    const store = openStore(pg?.url ?? `sqlite:${join(dir, 'old.db')}`);
    try {
      const migrator = new Migrator({
        db: store.db,
        provider: { getMigrations: async () => migrations(store.dialect) },
      });
      const before = await migrator.migrateTo('0016-workflows');
      assert.equal(before.error, undefined);
      const db = store.db;
      await db
        .insertInto('workspaces')
        .values({
          id: 'ws-1',
          name: 'w',
          plan: 'starter',
          transactional_per_second: null,
          marketing_per_second: null,
          default_from_email: null,
          created_at: 1,
        })
        .execute();
      // Written c, b, a: at one time; and x, a millisecond earlier, written last.
      for (const [id, at] of [
        ['evt_c', 1000],
        ['evt_b', 1000],
        ['evt_a', 1000],
        ['evt_x', 999],
      ] as const) {
        await db
          .insertInto('events')
          .values({ id, workspace_id: 'ws-1', type: 'email.sent', email_id: 'e-1', data: '{}', created_at: at })
          .execute();
      }
      await db
        .insertInto('webhook_endpoints')
        .values({
          id: 'wh-1',
          workspace_id: 'ws-1',
          surface: 'v1',
          url: 'https://hooks.example/x',
          events: '["*"]',
          description: null,
          secret_sealed: 'x',
          secret_hint: 'abcd',
          previous_secret_sealed: null,
          previous_secret_expires_at: null,
          status: 'enabled',
          disabled_reason: null,
          disabled_at: null,
          failing_since: null,
          last_success_at: null,
          last_failure_at: null,
          created_at: 1,
          updated_at: 1,
        })
        .execute();
      await db
        .insertInto('webhook_deliveries')
        .values({
          id: 'msg_1',
          endpoint_id: 'wh-1',
          workspace_id: 'ws-1',
          event_id: 'evt_b',
          event_type: 'email.sent',
          status: 'pending',
          attempt_count: 0,
          run_attempts: 0,
          next_attempt_at: 1,
          run_started_at: 1,
          lease_owner: null,
          lease_until: null,
          last_attempt_at: null,
          last_status_code: null,
          last_duration_ms: null,
          last_error: null,
          last_response: null,
          created_at: 1,
          updated_at: 1,
          completed_at: null,
        })
        .execute();

      await db
        .insertInto('stats_hourly')
        .values({
          workspace_id: 'ws-1',
          hour: 3600_000,
          domain_id: '',
          destination: '',
          metric: 'sent',
          count: 7,
        } as never)
        .execute();

      const { error, applied } = await migrateToLatest(store);
      assert.equal(error, undefined);
      assert.ok(applied.includes('0020-event-order'));
      const order = (await listEmailEvents(db, 'ws-1', 'e-1')).map((e) => e.id);
      // SQLite knows the order rows were written in (their rowids); PostgreSQL orders them by time, then id.
      assert.deepEqual(
        order,
        store.dialect === 'sqlite' ? ['evt_c', 'evt_b', 'evt_a', 'evt_x'] : ['evt_x', 'evt_a', 'evt_b', 'evt_c'],
      );
      const deliveries = await db.selectFrom('webhook_deliveries').select(['id', 'event_id']).execute();
      assert.deepEqual(deliveries, [{ id: 'msg_1', event_id: 'evt_b' }]);
      const stats = await db.selectFrom('stats_hourly').selectAll().execute();
      assert.deepEqual(
        stats.map((r) => [Number(r.count), Number(r.test)]),
        [[7, 0]],
        'the old counts are live mail',
      );
      // Live and test counts of one hour and metric live side by side.
      await db
        .insertInto('stats_hourly')
        .values({
          workspace_id: 'ws-1',
          hour: 3600_000,
          domain_id: '',
          destination: '',
          metric: 'sent',
          count: 2,
          test: 1,
        })
        .execute();

      // New events follow the old ones, and deleting an event still takes its deliveries with it.
      await db
        .transaction()
        .execute((trx) =>
          recordEvents(trx, [{ workspaceId: 'ws-1', type: 'email.delivered', emailId: 'e-1', at: 1, data: {} }]),
        );
      assert.equal((await listEmailEvents(db, 'ws-1', 'e-1')).at(-1)!.type, 'email.delivered');
      await db.deleteFrom('events').where('id', '=', 'evt_b').execute();
      assert.equal(
        await db.selectFrom('webhook_deliveries').select('id').where('id', '=', 'msg_1').executeTakeFirst(),
        undefined,
      );
    } finally {
      await store.close();
    }
  });
});
