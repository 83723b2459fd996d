import type { Kysely, Migration } from 'kysely';
import { blobType, type Dialect } from '../dialect.js';

/**
 * Sending: emails and their composed content, the queue (one row per recipient), delivery
 * attempts, the event log, idempotency keys, templates and suppressions.
 */
export const sending = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    const blob = blobType(dialect);

    await db.schema
      .createTable('emails')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('priority', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('intake', 'text', (c) => c.notNull())
      .addColumn('domain_id', 'text', (c) => c.references('domains.id').onDelete('set null'))
      .addColumn('from_address', 'text', (c) => c.notNull())
      .addColumn('from_header', 'text', (c) => c.notNull())
      .addColumn('to_addresses', 'text', (c) => c.notNull())
      .addColumn('cc_addresses', 'text')
      .addColumn('bcc_addresses', 'text')
      .addColumn('reply_to', 'text')
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('message_id', 'text', (c) => c.notNull())
      .addColumn('template_id', 'text')
      .addColumn('campaign_id', 'text')
      .addColumn('subscriber_id', 'text')
      .addColumn('tags', 'text')
      .addColumn('metadata', 'text')
      .addColumn('external_id', 'text')
      .addColumn('track_opens', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('track_clicks', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('scheduled_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('emails_workspace_id').on('emails').columns(['workspace_id', 'id']).execute();
    await db.schema.createIndex('emails_campaign').on('emails').column('campaign_id').execute();

    await db.schema
      .createTable('email_contents')
      .addColumn('email_id', 'text', (c) => c.primaryKey().references('emails.id').onDelete('cascade'))
      .addColumn('raw', blob, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('queue_items')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('email_id', 'text', (c) => c.notNull().references('emails.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('recipient', 'text', (c) => c.notNull())
      .addColumn('recipient_domain', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('priority', 'integer', (c) => c.notNull())
      .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('last_code', 'integer')
      .addColumn('last_response', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('finished_at', 'bigint')
      .execute();
    // The claim: due rows by priority, then by when they became due.
    await db.schema
      .createIndex('queue_items_due')
      .on('queue_items')
      .columns(['status', 'priority', 'next_attempt_at'])
      .execute();
    await db.schema.createIndex('queue_items_email').on('queue_items').column('email_id').execute();

    await db.schema
      .createTable('delivery_attempts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('queue_item_id', 'text', (c) => c.notNull().references('queue_items.id').onDelete('cascade'))
      .addColumn('email_id', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('category', 'text')
      .addColumn('mx_host', 'text')
      .addColumn('code', 'integer')
      .addColumn('response', 'text')
      .addColumn('tls', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.createIndex('delivery_attempts_email').on('delivery_attempts').column('email_id').execute();
    await db.schema.createIndex('delivery_attempts_started').on('delivery_attempts').column('started_at').execute();

    await db.schema
      .createTable('events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('email_id', 'text')
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('events_email').on('events').column('email_id').execute();
    await db.schema.createIndex('events_created').on('events').column('created_at').execute();

    await db.schema
      .createTable('idempotency_keys')
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('response_status', 'integer')
      .addColumn('response_body', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('locked_until', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['workspace_id', 'key'])
      .execute();
    await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').column('created_at').execute();

    await db.schema
      .createTable('templates')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('html', 'text', (c) => c.notNull())
      .addColumn('text', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('templates_workspace').on('templates').columns(['workspace_id', 'id']).execute();

    await db.schema
      .createTable('suppressions')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('detail', 'text')
      .addColumn('email_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('suppressions_pk', ['workspace_id', 'address'])
      .execute();
  },
  async down(db: Kysely<any>) {
    for (const table of [
      'suppressions',
      'templates',
      'idempotency_keys',
      'events',
      'delivery_attempts',
      'queue_items',
      'email_contents',
      'emails',
    ]) {
      await db.schema.dropTable(table).execute();
    }
  },
});
