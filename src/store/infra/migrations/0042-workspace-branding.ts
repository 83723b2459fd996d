import type { Kysely, Migration } from 'kysely';

/** A workspace's logo, shown with its name on the preference centre its contacts reach from every marketing message. */
export const workspaceBranding = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('workspaces').addColumn('logo_url', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('workspaces').dropColumn('logo_url').execute();
  },
});
