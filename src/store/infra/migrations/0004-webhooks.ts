import type { Kysely, Migration } from 'kysely';

/**
 * Webhooks: endpoints, the delivery outbox (event × endpoint, written with the event) and
 * every attempt made; and an index to find an email by Message-ID (feedback reports).
 */
export const webhooks = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('webhook_endpoints')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('surface', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('secret_hint', 'text', (c) => c.notNull())
      .addColumn('previous_secret_sealed', 'text')
      .addColumn('previous_secret_expires_at', 'bigint')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('disabled_reason', 'text')
      .addColumn('disabled_at', 'bigint')
      .addColumn('failing_since', 'bigint')
      .addColumn('last_success_at', 'bigint')
      .addColumn('last_failure_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('webhook_endpoints_workspace_url')
      .on('webhook_endpoints')
      .columns(['workspace_id', 'url'])
      .unique()
      .execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('run_attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('run_started_at', 'bigint', (c) => c.notNull())
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('last_attempt_at', 'bigint')
      .addColumn('last_status_code', 'integer')
      .addColumn('last_duration_ms', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('last_response', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('completed_at', 'bigint')
      .execute();
    // The claim: due pending rows, grouped by endpoint.
    await db.schema
      .createIndex('webhook_deliveries_due')
      .on('webhook_deliveries')
      .columns(['status', 'next_attempt_at'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_endpoint')
      .on('webhook_deliveries')
      .columns(['endpoint_id', 'status', 'next_attempt_at'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_listing')
      .on('webhook_deliveries')
      .columns(['endpoint_id', 'created_at'])
      .execute();
    await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();

    await db.schema
      .createTable('webhook_attempts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
      .addColumn('endpoint_id', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('status_code', 'integer')
      .addColumn('error', 'text')
      .addColumn('response', 'text')
      .addColumn('next_attempt_at', 'bigint')
      .execute();
    await db.schema
      .createIndex('webhook_attempts_delivery')
      .on('webhook_attempts')
      .columns(['delivery_id', 'started_at'])
      .execute();
    await db.schema.createIndex('webhook_attempts_started').on('webhook_attempts').column('started_at').execute();

    // Feedback reports name the original message by its Message-ID.
    await db.schema.createIndex('emails_message_id').on('emails').column('message_id').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('emails_message_id').execute();
    for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints'])
      await db.schema.dropTable(table).execute();
  },
});
