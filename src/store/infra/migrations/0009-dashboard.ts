import type { Kysely, Migration } from 'kysely';

/** Dashboard sign-in: sessions and one-time login links, both kept only as SHA-256 of their secret. */
export const dashboard = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('dashboard_sessions')
      .addColumn('id_hash', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.references('workspaces.id').onDelete('set null'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('dashboard_sessions_expires').on('dashboard_sessions').column('expires_at').execute();

    await db.schema
      .createTable('dashboard_login_tokens')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('dashboard_login_tokens').execute();
    await db.schema.dropTable('dashboard_sessions').execute();
  },
});
