import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AppError } from '../../src/shared/errors.js';
import { newId } from '../../src/shared/ids.js';
import { migrateToLatest, openStore, type Store } from '../../src/store/infra/db.js';
import { findDomain, saveDomain, type Domain } from '../../src/store/domains.js';
import { findTemplate, saveTemplate, updateTemplate, type Template } from '../../src/store/templates.js';
import { isUniqueViolation } from '../../src/store/infra/unique-violation.js';
import { saveWorkspace } from '../../src/store/workspaces.js';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '../helpers/postgres.js';

/**
 * Repositories hand back entities and write rows as they always were written (a database of an
 * earlier version reads the same); a unique index that says "this exists already" becomes the
 * catalog's `already_exists` in the repository, on both engines, and only a unique violation
 * does. SQLite always; PostgreSQL when MAILSVC_TEST_POSTGRES is set.
 */
const targets: Array<{ name: string; open: () => Promise<TestDatabase> }> = [
  {
    name: 'sqlite',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'mailsvc-conflicts-'));
      return {
        url: `sqlite:${join(dir, 'db.sqlite')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];
if (testPostgresUrl()) targets.push({ name: 'postgres', open: () => createTestDatabase() });

const domainOf = (workspaceId: string, name: string): Domain => ({
  id: newId(),
  workspace_id: workspaceId,
  name,
  status: 'pending',
  external_id: null,
  metadata: { plan: 'x' },
  created_at: 1,
  verified_at: null,
  last_checked_at: null,
  last_check_error: null,
  checks: null,
  ip_pool_id: null,
  open_tracking: true,
  click_tracking: null,
  tls: 'opportunistic',
  return_path_subdomain: null,
  tracking_subdomain: null,
});
const keyOf = (domainId: string, selector = `s${newId().slice(-12)}`) => ({
  selector,
  domain_id: domainId,
  position: 0,
  private_key_sealed: 'sealed',
  public_key: 'pub',
  created_at: 1,
});

for (const target of targets) {
  describe(`entities of the store on ${target.name}`, () => {
    let database: TestDatabase;
    let store: Store;
    const workspaceId = newId();

    before(async () => {
      database = await target.open();
      store = openStore(database.url);
      assert.equal((await migrateToLatest(store)).error, undefined);
      await saveWorkspace(store.db, {
        id: workspaceId,
        name: 'w',
        plan: 'starter',
        transactional_per_second: null,
        marketing_per_second: null,
        default_from_email: null,
        created_at: 1,
        logo_url: null,
        ip_pool_id: null,
      });
    });
    after(async () => {
      await store?.close();
      await database?.drop();
    });

    it('hands back what it saved, decoded', async () => {
      const domain = domainOf(workspaceId, 'entities.test');
      await saveDomain(store.db, domain, [keyOf(domain.id)]);
      assert.deepEqual(await findDomain(store.db, workspaceId, domain.id), domain);
    });

    it('reads and writes a published template as earlier versions did: JSON whose reply_to and variables are JSON text', async () => {
      const template: Template = {
        id: newId(),
        workspace_id: workspaceId,
        name: 'welcome',
        subject: 'Hi',
        html: '<p>Hi {{name}}</p>',
        text: null,
        alias: null,
        from_address: null,
        reply_to: ['"Ann" <ann@example.org>'],
        variables: [{ key: 'name', type: 'string', fallback_value: 'friend' }],
        published: null,
        published_at: null,
        created_at: 1,
        updated_at: 1,
        language: 'html',
        source: null,
        published_version: null,
      };
      await saveTemplate(store.db, template);
      const published = {
        subject: 'Hi',
        html: '<p>Hi {{name}}</p>',
        text: null,
        from: null,
        reply_to: template.reply_to,
        variables: template.variables,
      };
      await updateTemplate(store.db, workspaceId, template.id, { published, published_at: 2 });
      const row = await store.db
        .selectFrom('templates')
        .select(['reply_to', 'variables', 'published'])
        .where('id', '=', template.id)
        .executeTakeFirstOrThrow();
      assert.equal(row.reply_to, '["\\"Ann\\" <ann@example.org>"]');
      assert.equal(row.variables, '[{"key":"name","type":"string","fallback_value":"friend"}]');
      assert.equal(
        row.published,
        JSON.stringify({
          subject: 'Hi',
          html: '<p>Hi {{name}}</p>',
          text: null,
          from: null,
          reply_to: row.reply_to,
          variables: row.variables,
        }),
      );
      assert.deepEqual(await findTemplate(store.db, workspaceId, template.id), {
        ...template,
        published,
        published_at: 2,
      });
    });

    it('turns a second domain of one name, even two at once, into already_exists', async () => {
      const twice = [domainOf(workspaceId, 'twice.test'), domainOf(workspaceId, 'twice.test')];
      const results = await Promise.allSettled(twice.map((domain) => saveDomain(store.db, domain, [keyOf(domain.id)])));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      assert.ok(refused.reason instanceof AppError, String(refused.reason));
      assert.equal(refused.reason.code, 'already_exists');
      assert.equal(refused.reason.message, 'Domain twice.test already exists');
      assert.equal(refused.reason.field, 'domain');
    });

    it('turns a taken template alias into already_exists, on insert and on update', async () => {
      const template = (alias: string | null): Template => ({
        id: newId(),
        workspace_id: workspaceId,
        name: 't',
        subject: '',
        html: '<p>x</p>',
        text: null,
        alias,
        from_address: null,
        reply_to: null,
        variables: null,
        published: null,
        published_at: null,
        created_at: 1,
        updated_at: 1,
        language: 'html',
        source: null,
        published_version: null,
      });
      await saveTemplate(store.db, template('taken'));
      const second = await saveTemplate(store.db, template('taken')).catch((err: unknown) => err);
      assert.ok(
        second instanceof AppError && second.code === 'already_exists' && second.field === 'alias',
        String(second),
      );
      const other = template(null);
      await saveTemplate(store.db, other);
      const renamed = await updateTemplate(store.db, workspaceId, other.id, { alias: 'taken' }).catch(
        (err: unknown) => err,
      );
      assert.ok(
        renamed instanceof AppError && renamed.message === 'alias: another template is named taken',
        String(renamed),
      );
    });

    it('leaves other failures alone: a unique violation of another table, a missing workspace', async () => {
      const first = domainOf(workspaceId, 'keys.test');
      await saveDomain(store.db, first, [keyOf(first.id, 'same-selector')]);
      const second = domainOf(workspaceId, 'other-keys.test');
      const clash = await saveDomain(store.db, second, [keyOf(second.id, 'same-selector')]).catch(
        (err: unknown) => err,
      );
      assert.ok(!(clash instanceof AppError), 'a DKIM selector clash is not "the domain exists"');
      assert.ok(isUniqueViolation(clash, 'dkim_keys'));
      assert.ok(!isUniqueViolation(clash, 'domains'));
      const orphan = await saveDomain(store.db, domainOf(newId(), 'orphan.test'), []).catch((err: unknown) => err);
      assert.ok(orphan instanceof Error && !(orphan instanceof AppError), String(orphan));
      assert.ok(!isUniqueViolation(orphan));
    });
  });
}
