import type { Kysely, Migration } from 'kysely';

/** Declared contact properties (Resend's `contactProperties`): a key, a type and a fallback value. */
export const contactProperties = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('contact_properties')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('fallback_value', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('contact_properties_key', ['workspace_id', 'key'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('contact_properties').execute();
  },
});
