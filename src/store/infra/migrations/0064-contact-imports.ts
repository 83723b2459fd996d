import type { Kysely, Migration } from 'kysely';

/**
 * Contact imports (Resend's `contacts.imports`): one row per uploaded CSV, its options, its
 * progress and counts, and the first per-row errors. The file itself is spooled under the
 * data directory until it has been read.
 */
export const contactImports = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('contact_imports')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('file_name', 'text')
      .addColumn('file_bytes', 'bigint', (c) => c.notNull())
      .addColumn('file_sha256', 'text', (c) => c.notNull())
      .addColumn('options', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text')
      .addColumn('total', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('created', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('updated', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('skipped', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('failed', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('errors', 'text', (c) => c.notNull())
      .addColumn('failure', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('completed_at', 'bigint')
      .addUniqueConstraint('contact_imports_idempotency_key', ['workspace_id', 'idempotency_key'])
      .execute();
    await db.schema.createIndex('contact_imports_status').on('contact_imports').columns(['status']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('contact_imports').execute();
  },
});
