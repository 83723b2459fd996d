import type { Kysely, Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

export const foundation = (_dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('workspaces')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('plan', 'text', (c) => c.notNull().defaultTo('starter'))
      .addColumn('transactional_per_second', 'integer')
      .addColumn('marketing_per_second', 'integer')
      .addColumn('default_from_email', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('credentials')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.references('workspaces.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('master', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('prefix', 'text', (c) => c.notNull())
      .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
      .addColumn('scopes', 'text')
      .addColumn('expires_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('last_used_at', 'bigint')
      .addColumn('revoked_at', 'bigint')
      .execute();
    await db.schema.createIndex('credentials_workspace').on('credentials').column('workspace_id').execute();

    await db.schema
      .createTable('domains')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('external_id', 'text')
      .addColumn('metadata', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('verified_at', 'bigint')
      .addColumn('last_checked_at', 'bigint')
      .addColumn('last_check_error', 'text')
      .addUniqueConstraint('domains_workspace_name', ['workspace_id', 'name'])
      .execute();
    await db.schema.createIndex('domains_status').on('domains').column('status').execute();

    await db.schema
      .createTable('dkim_keys')
      .addColumn('selector', 'text', (c) => c.primaryKey())
      .addColumn('domain_id', 'text', (c) => c.notNull().references('domains.id').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('private_key_sealed', 'text', (c) => c.notNull())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('dkim_keys_domain').on('dkim_keys').column('domain_id').execute();
  },
  async down(db: Kysely<any>) {
    for (const table of ['dkim_keys', 'domains', 'credentials', 'workspaces']) {
      await db.schema.dropTable(table).execute();
    }
  },
});
