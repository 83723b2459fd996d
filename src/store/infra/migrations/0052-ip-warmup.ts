import type { Kysely, Migration } from 'kysely';

/**
 * IP warm-up: an address in warm-up sends each day at most its schedule's cap per mailbox
 * provider. The counts are rows, one per address, provider and warm-up day, incremented only
 * while under the cap (one conditional UPDATE): every node sharing the database shares them.
 */
export const ipWarmup = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('ip_warmups')
      .addColumn('address', 'text', (c) => c.primaryKey())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      /** JSON array of daily caps; null: the default schedule (delivery.warmup). */
      .addColumn('schedule', 'text')
      .execute();
    await db.schema
      .createTable('warmup_counts')
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      /** The start of the warm-up day (epoch ms): started_at + day × the day's length. */
      .addColumn('period_start', 'bigint', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('warmup_counts_pk', ['address', 'provider', 'period_start'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('warmup_counts').execute();
    await db.schema.dropTable('ip_warmups').execute();
  },
});
