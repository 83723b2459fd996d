import type { Kysely, Migration } from 'kysely';

/**
 * Several nodes on one database: rate-limit counters live in a table so every node counts
 * against the same window (fixed windows; see src/services/rate-limits.ts).
 */
export const cluster = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('rate_limit_windows')
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('window_start', 'bigint', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('rate_limit_windows_pk', ['key', 'window_start'])
      .execute();
    await db.schema.createIndex('rate_limit_windows_expires').on('rate_limit_windows').column('expires_at').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('rate_limit_windows').execute();
  },
});
