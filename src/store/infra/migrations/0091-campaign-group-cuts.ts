import type { Kysely, Migration } from 'kysely';

/**
 * Where a campaign's recipients are cut into holdout, variants and the rest (hash values, JSON),
 * computed once when its queuing starts so that the groups hold exact counts (issue 32).
 * Null: cut by percentages of the hash space (campaigns queued before).
 */
export const campaignGroupCuts = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('campaigns').addColumn('group_cuts', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('campaigns').dropColumn('group_cuts').execute();
  },
});
