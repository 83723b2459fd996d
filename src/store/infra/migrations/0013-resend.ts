import type { Kysely, Migration } from 'kysely';

/**
 * What Resend's API shape needs on the records we already have: keys restricted to sending
 * (from one domain), broadcasts as campaigns (drafts, schedules, text, reply-to, preview
 * text, a topic), templates with an alias, defaults and a published version, and topics:
 * per-subscriber subscription preferences.
 */
export const resend = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('credentials').addColumn('domain_id', 'text').execute();

    for (const [column, type] of [
      ['text', 'text'],
      ['reply_to', 'text'],
      ['preview_text', 'text'],
      ['topic_id', 'text'],
      ['scheduled_at', 'bigint'],
      ['cancelled_at', 'bigint'],
      ['updated_at', 'bigint'],
    ] as const) {
      await db.schema.alterTable('campaigns').addColumn(column, type).execute();
    }

    for (const [column, type] of [
      ['alias', 'text'],
      ['from_address', 'text'],
      ['reply_to', 'text'],
      ['variables', 'text'],
      ['published', 'text'],
      ['published_at', 'bigint'],
    ] as const) {
      await db.schema.alterTable('templates').addColumn(column, type).execute();
    }
    await db.schema
      .createIndex('templates_alias')
      .on('templates')
      .columns(['workspace_id', 'alias'])
      .unique()
      .execute();

    await db.schema
      .createTable('topics')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('default_subscription', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('topics_workspace').on('topics').columns(['workspace_id', 'id']).execute();

    await db.schema
      .createTable('subscriber_topics')
      .addColumn('subscriber_id', 'text', (c) => c.notNull().references('subscribers.id').onDelete('cascade'))
      .addColumn('topic_id', 'text', (c) => c.notNull().references('topics.id').onDelete('cascade'))
      .addColumn('subscription', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('subscriber_topics_pk', ['subscriber_id', 'topic_id'])
      .execute();
    await db.schema
      .createIndex('subscriber_topics_topic')
      .on('subscriber_topics')
      .columns(['topic_id', 'subscription'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('subscriber_topics').execute();
    await db.schema.dropTable('topics').execute();
    await db.schema.dropIndex('templates_alias').execute();
    for (const column of ['alias', 'from_address', 'reply_to', 'variables', 'published', 'published_at']) {
      await db.schema.alterTable('templates').dropColumn(column).execute();
    }
    for (const column of [
      'text',
      'reply_to',
      'preview_text',
      'topic_id',
      'scheduled_at',
      'cancelled_at',
      'updated_at',
    ]) {
      await db.schema.alterTable('campaigns').dropColumn(column).execute();
    }
    await db.schema.alterTable('credentials').dropColumn('domain_id').execute();
  },
});
