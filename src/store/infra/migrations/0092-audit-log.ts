import type { Kysely, Migration } from 'kysely';

/**
 * The audit log: who (an API key, a dashboard session, the CLI) did what to which object and
 * from where. Append-only: the store has no update of it and deletes only what is older than
 * `retention.auditDays`. Rows outlive the workspace they name (no cascade): a record of a
 * deletion must survive it.
 */
export const auditLog = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('audit_log')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text')
      .addColumn('actor_type', 'text', (c) => c.notNull())
      .addColumn('actor_id', 'text')
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('object_type', 'text', (c) => c.notNull())
      .addColumn('object_id', 'text')
      .addColumn('detail', 'text')
      .addColumn('client_address', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_log_workspace').on('audit_log').columns(['workspace_id', 'id']).execute();
    await db.schema.createIndex('audit_log_created').on('audit_log').column('created_at').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('audit_log').execute();
  },
});
