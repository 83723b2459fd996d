import type { Kysely, Migration } from 'kysely';

/**
 * The worker kernel's round: `instance` holds facts about the database itself (the check value
 * sealed with the secret key, so a node started with another key is refused); and
 * `delivery_destinations` is what each node's delivery gate holds per destination, written a
 * few times a minute so that `mailsvc queue list` and every node can see why mail waits.
 */
export const kernel = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('instance')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('delivery_destinations')
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('domain', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('allowed', 'integer', (c) => c.notNull())
      .addColumn('waiting', 'integer', (c) => c.notNull())
      .addColumn('paused_until', 'bigint')
      .addColumn('hold', 'text')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('delivery_destinations_pk', ['owner', 'domain'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('delivery_destinations').execute();
    await db.schema.dropTable('instance').execute();
  },
});
