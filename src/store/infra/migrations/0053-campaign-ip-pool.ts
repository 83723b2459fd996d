import type { Kysely, Migration } from 'kysely';

/** A campaign (broadcast) may name the IP pool its messages leave through. */
export const campaignIpPool = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('campaigns').addColumn('ip_pool_id', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('campaigns').dropColumn('ip_pool_id').execute();
  },
});
