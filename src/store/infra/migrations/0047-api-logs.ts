import type { Kysely, Migration } from 'kysely';

/**
 * Every authenticated API request of a workspace (Resend's `logs`): method, path, status, user
 * agent and the bodies with secrets and attachment content redacted; kept `retention.days`.
 */
export const apiLogs = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('api_logs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('credential_id', 'text')
      .addColumn('request_id', 'text')
      .addColumn('method', 'text', (c) => c.notNull())
      .addColumn('endpoint', 'text', (c) => c.notNull())
      .addColumn('response_status', 'integer', (c) => c.notNull())
      .addColumn('user_agent', 'text')
      .addColumn('request_body', 'text')
      .addColumn('response_body', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('api_logs_workspace').on('api_logs').columns(['workspace_id', 'id']).execute();
    await db.schema.createIndex('api_logs_created').on('api_logs').column('created_at').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('api_logs').execute();
  },
});
