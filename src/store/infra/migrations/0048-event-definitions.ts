import type { Kysely, Migration } from 'kysely';

/** Declared custom events (Resend's `events.create`): a name and a typed schema its payloads are checked against. */
export const eventDefinitions = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('event_definitions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('schema', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint')
      .addUniqueConstraint('event_definitions_name', ['workspace_id', 'name'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('event_definitions').execute();
  },
});
