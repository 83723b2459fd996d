import type { Kysely, Migration } from 'kysely';

/**
 * The template studio: a template's source language (`html`, or `mjml` kept beside the HTML
 * it compiles to) and its published versions, one immutable row each, so that what a send
 * used is never rewritten and an old version can be restored.
 */
export const templateStudio = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('templates')
      .addColumn('language', 'text', (c) => c.notNull().defaultTo('html'))
      .execute();
    await db.schema.alterTable('templates').addColumn('source', 'text').execute();
    await db.schema.alterTable('templates').addColumn('published_version', 'integer').execute();
    await db.schema
      .createTable('template_versions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('html', 'text', (c) => c.notNull())
      .addColumn('text', 'text')
      .addColumn('from_address', 'text')
      .addColumn('reply_to', 'text')
      .addColumn('variables', 'text')
      .addColumn('language', 'text', (c) => c.notNull())
      .addColumn('source', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('template_versions_number', ['template_id', 'version'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('template_versions').execute();
    await db.schema.alterTable('templates').dropColumn('published_version').execute();
    await db.schema.alterTable('templates').dropColumn('source').execute();
    await db.schema.alterTable('templates').dropColumn('language').execute();
  },
});
