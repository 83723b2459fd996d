import type { Kysely, Migration } from 'kysely';

/**
 * The reputation guard also watches engagement: of the tracked marketing messages a sending
 * domain delivered in the window, how many anyone opened and how many people did (Apple's
 * prefetch and scanners left out).
 */
export const guardEngagement = (): Migration => ({
  async up(db: Kysely<any>) {
    for (const column of ['tracked', 'opened', 'human_opened']) {
      await db.schema
        .alterTable('reputation_states')
        .addColumn(column, 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    }
  },
  async down(db: Kysely<any>) {
    for (const column of ['human_opened', 'opened', 'tracked'])
      await db.schema.alterTable('reputation_states').dropColumn(column).execute();
  },
});
