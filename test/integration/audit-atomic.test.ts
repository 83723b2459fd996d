import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditService } from '../../src/services/audit.js';
import { withAuditTrail } from '../../src/services/audit-trail.js';
import { atomically, outsideUnit } from '../../src/store/infra/ambient-transaction.js';
import { appendAuditEntries } from '../../src/store/audit-log.js';
import { newId } from '../../src/shared/ids.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * An audit entry commits with the change it records (issue 32): the use case and the append
 * run as one unit (store/infra/ambient-transaction.ts), on SQLite and PostgreSQL alike.
 */

describe('audit entries in the transaction of their change', () => {
  let server: TestServer;
  const suppressed = async (email: string) =>
    (await server.runtime.services.suppressions.list(server.workspaceId, { limit: 500, offset: 0 })).items.some(
      (s) => s.email === email,
    );
  const entries = async () =>
    (await server.runtime.services.audit.list({ workspaceId: server.workspaceId, instance: true }, { limit: '100' }))
      .data;

  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('records a change once, and the record is there when the call returns', async () => {
    await server.runtime.services.suppressions.add(server.workspaceId, { email: 'one@atomic.test' });
    const found = (await entries()).filter(
      (e) => e.action === 'suppression.added' && e.object_id === 'one@atomic.test',
    );
    assert.equal(found.length, 1);
  });

  it('an entry that cannot be written takes its change with it', async () => {
    const { services, store } = server.runtime;
    const broken: AuditService = {
      ...services.audit,
      record: () => Promise.reject(new Error('the audit log refused the entry')),
    };
    const audited = withAuditTrail(services, broken, store);
    const before = (await entries()).length;
    await assert.rejects(
      audited.suppressions.add(server.workspaceId, { email: 'two@atomic.test' }),
      /refused the entry/,
    );
    assert.equal(await suppressed('two@atomic.test'), false, 'the change was rolled back');
    assert.equal((await entries()).length, before, 'and the inner trail’s entry with it');
  });

  it('a unit that fails after its change leaves neither the change nor its entry', async () => {
    const before = (await entries()).length;
    await assert.rejects(
      atomically(server.runtime.store.db, async () => {
        await server.runtime.services.suppressions.add(server.workspaceId, { email: 'three@atomic.test' });
        throw new Error('failed after the change');
      }),
      /failed after/,
    );
    assert.equal(await suppressed('three@atomic.test'), false);
    assert.equal((await entries()).length, before);
  });

  it('a transaction inside a unit is a savepoint: its failure undoes only itself', async () => {
    const { db } = server.runtime.store;
    const stray = newId();
    await atomically(db, async () => {
      await server.runtime.services.suppressions.add(server.workspaceId, { email: 'four@atomic.test' });
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await appendAuditEntries(trx, [
            {
              id: stray,
              workspace_id: server.workspaceId,
              actor_type: 'system',
              actor_id: null,
              action: 'test.stray',
              object_type: 'test',
              object_id: null,
              detail: null,
              client_address: null,
              created_at: Date.now(),
            },
          ]);
          throw new Error('inner');
        }),
        /inner/,
      );
    });
    assert.equal(await suppressed('four@atomic.test'), true);
    assert.equal(
      (await entries()).some((e) => e.id === stray),
      false,
    );
  });

  it('other requests wait for a unit rather than join it, and the commit batcher runs inline in it', async () => {
    const { db } = server.runtime.store;
    const { services } = server.runtime;
    let inside = false;
    const unit = atomically(db, async () => {
      await services.suppressions.add(server.workspaceId, { email: 'five@atomic.test' });
      inside = true;
      // A grouped write from inside the unit: run in it, not queued behind the connection it holds.
      await services.batcher.run(async (trx) => {
        await trx.selectFrom('audit_log').select('id').limit(1).execute();
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      throw new Error('rolled back');
    });
    // Another request meanwhile: it must not see or join the unit's uncommitted suppression.
    while (!inside) await new Promise((resolve) => setImmediate(resolve));
    const outside = suppressed('five@atomic.test');
    await assert.rejects(unit, /rolled back/);
    assert.equal(await outside, false);
  });

  it('reads before the first write hold nothing: a unit may wait for another request meanwhile', async () => {
    const { db } = server.runtime.store;
    const { services } = server.runtime;
    await atomically(db, async () => {
      await services.suppressions.list(server.workspaceId, { limit: 1, offset: 0 });
      // As a DNS look-up or another request the use case waits for: on SQLite this would wait
      // forever for the one connection if the unit had taken it at its first read.
      await outsideUnit(() => services.suppressions.list(server.workspaceId, { limit: 1, offset: 0 }));
      await services.suppressions.add(server.workspaceId, { email: 'six@atomic.test' });
    });
    assert.equal(await suppressed('six@atomic.test'), true);
  });

  it("an API key's changes to templates, contacts and segments are recorded as that key", async () => {
    const key = await server.key();
    const keyId = (
      await server.runtime.services.credentials.list({ workspaceId: server.workspaceId, oauth: false })
    ).find((k) => key.startsWith(k.prefix))!.id;
    const api = (path: string, body: unknown) => request(server.httpUrl, 'POST', path, { key, body });
    const template = await api('/v1/templates', { name: 'Audited', html: '<p>hi</p>' });
    assert.equal(template.status, 201, show(template));
    const contact = await api('/v1/contacts', { email: 'audited@atomic.test' });
    assert.ok(contact.status === 200 || contact.status === 201, show(contact));
    const segment = await api('/v1/segments', { name: 'Audited segment' });
    assert.ok(segment.status === 200 || segment.status === 201, show(segment));
    const byKey = (await entries())
      .filter((e) => e.actor.type === 'api_key' && e.actor.id === keyId)
      .map((e) => e.action);
    for (const action of ['template.created', 'contact.created', 'segment.created'])
      assert.ok(byKey.includes(action), `${action} in ${byKey.join(', ')}`);
    assert.equal(JSON.stringify(await entries()).includes(key), false, 'never the key');
  });
});
