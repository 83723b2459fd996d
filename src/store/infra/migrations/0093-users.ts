import type { Kysely, Migration } from 'kysely';

/**
 * Dashboard users (issue 32): people with an email address and a scrypt password hash, their
 * role in each workspace, one-time invitation links (kept as SHA-256, as login links are), and
 * the user a dashboard session belongs to (null: a session of the shared password or a CLI link).
 */
export const users = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('email', 'text', (c) => c.notNull().unique())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('workspace_members')
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('workspace_members_pk', ['user_id', 'workspace_id'])
      .execute();
    await db.schema
      .createTable('user_invites')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .execute();
    await db.schema
      .alterTable('dashboard_sessions')
      .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('dashboard_sessions').dropColumn('user_id').execute();
    await db.schema.dropTable('user_invites').execute();
    await db.schema.dropTable('workspace_members').execute();
    await db.schema.dropTable('users').execute();
  },
});
