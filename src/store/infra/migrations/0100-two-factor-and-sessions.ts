import type { Kysely, Migration } from 'kysely';

/**
 * Two-factor sign-in and visible sessions (issue 32): a user's TOTP secret (sealed with the
 * instance key; unconfirmed until a first code proves the authenticator has it, and with the
 * last time step used so a code works once), their recovery codes (SHA-256, each used once),
 * the workspaces that require a second factor, and where and when each dashboard session was
 * made and last seen.
 */
export const twoFactorAndSessions = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('user_two_factor')
      .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('confirmed_at', 'bigint')
      .addColumn('last_step', 'bigint')
      .execute();
    await db.schema
      .createTable('user_recovery_codes')
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('code_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .addPrimaryKeyConstraint('user_recovery_codes_pk', ['user_id', 'code_hash'])
      .execute();
    await db.schema
      .createTable('workspace_two_factor')
      .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
      .addColumn('required_at', 'bigint', (c) => c.notNull())
      .addColumn('required_by', 'text')
      .execute();
    await db.schema.alterTable('dashboard_sessions').addColumn('client_address', 'text').execute();
    await db.schema.alterTable('dashboard_sessions').addColumn('user_agent', 'text').execute();
    await db.schema.alterTable('dashboard_sessions').addColumn('last_seen_at', 'bigint').execute();
    await db.schema.createIndex('dashboard_sessions_user').on('dashboard_sessions').column('user_id').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('dashboard_sessions_user').execute();
    await db.schema.alterTable('dashboard_sessions').dropColumn('last_seen_at').execute();
    await db.schema.alterTable('dashboard_sessions').dropColumn('user_agent').execute();
    await db.schema.alterTable('dashboard_sessions').dropColumn('client_address').execute();
    await db.schema.dropTable('workspace_two_factor').execute();
    await db.schema.dropTable('user_recovery_codes').execute();
    await db.schema.dropTable('user_two_factor').execute();
  },
});
