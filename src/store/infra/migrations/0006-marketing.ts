import type { Kysely, Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

/** Marketing: subscribers and their tags, audiences, campaigns. */
export const marketing = (_dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('subscribers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('email_key', 'text', (c) => c.notNull())
      .addColumn('first_name', 'text')
      .addColumn('last_name', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('domain_id', 'text', (c) => c.references('domains.id').onDelete('set null'))
      .addColumn('external_id', 'text')
      .addColumn('metadata', 'text')
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('unsubscribed_at', 'bigint')
      .addUniqueConstraint('subscribers_workspace_email', ['workspace_id', 'email_key'])
      .execute();
    await db.schema.createIndex('subscribers_workspace_id').on('subscribers').columns(['workspace_id', 'id']).execute();
    await db.schema
      .createIndex('subscribers_external_id')
      .on('subscribers')
      .columns(['workspace_id', 'external_id'])
      .execute();

    await db.schema
      .createTable('subscriber_tags')
      .addColumn('subscriber_id', 'text', (c) => c.notNull().references('subscribers.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('tag', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('subscriber_tags_pk', ['subscriber_id', 'tag'])
      .execute();
    await db.schema
      .createIndex('subscriber_tags_tag')
      .on('subscriber_tags')
      .columns(['workspace_id', 'tag', 'subscriber_id'])
      .execute();

    await db.schema
      .createTable('audiences')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audiences_workspace').on('audiences').columns(['workspace_id', 'id']).execute();

    await db.schema
      .createTable('audience_members')
      .addColumn('audience_id', 'text', (c) => c.notNull().references('audiences.id').onDelete('cascade'))
      .addColumn('subscriber_id', 'text', (c) => c.notNull().references('subscribers.id').onDelete('cascade'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('audience_members_pk', ['audience_id', 'subscriber_id'])
      .execute();

    await db.schema
      .createTable('campaigns')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('from_name', 'text', (c) => c.notNull())
      .addColumn('from_email', 'text', (c) => c.notNull())
      .addColumn('html', 'text')
      .addColumn('template_id', 'text')
      .addColumn('tags', 'text')
      .addColumn('audience_id', 'text')
      .addColumn('variables', 'text')
      .addColumn('external_id', 'text')
      .addColumn('metadata', 'text')
      .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('recipients', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('queued', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('cursor', 'text')
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('queued_at', 'bigint')
      .addColumn('sent_at', 'bigint')
      .execute();
    await db.schema.createIndex('campaigns_workspace').on('campaigns').columns(['workspace_id', 'id']).execute();
    await db.schema.createIndex('campaigns_status').on('campaigns').column('status').execute();
  },
  async down(db: Kysely<any>) {
    for (const table of ['campaigns', 'audience_members', 'audiences', 'subscriber_tags', 'subscribers']) {
      await db.schema.dropTable(table).execute();
    }
  },
});
