import type { Kysely, Migration } from 'kysely';

/**
 * IP pools: named sets of source addresses, each with the EHLO name that matches its PTR.
 * A message records the pool it leaves through (`emails.ip_pool_id`), chosen when it is
 * accepted: its own, else its sending domain's, else its workspace's; null is the default
 * (the system's address).
 */
export const ipPools = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('ip_pools')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('ip_pool_addresses')
      .addColumn('pool_id', 'text', (c) => c.notNull().references('ip_pools.id').onDelete('cascade'))
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('ehlo', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('ip_pool_addresses_pk', ['pool_id', 'address'])
      .execute();
    for (const table of ['emails', 'domains', 'workspaces'])
      await db.schema.alterTable(table).addColumn('ip_pool_id', 'text').execute();
  },
  async down(db: Kysely<any>) {
    for (const table of ['workspaces', 'domains', 'emails'])
      await db.schema.alterTable(table).dropColumn('ip_pool_id').execute();
    await db.schema.dropTable('ip_pool_addresses').execute();
    await db.schema.dropTable('ip_pools').execute();
  },
});
