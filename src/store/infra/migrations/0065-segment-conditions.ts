import type { Kysely, Migration } from 'kysely';

/** Segments (audiences) with conditions on contact properties: every contact meeting them is a member. */
export const segmentConditions = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('audiences').addColumn('conditions', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('audiences').dropColumn('conditions').execute();
  },
});
