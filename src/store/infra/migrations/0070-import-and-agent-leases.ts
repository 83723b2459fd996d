import type { Kysely, Migration } from 'kysely';
import { blobType, type Dialect } from '../dialect.js';

/**
 * Contact imports and inbox-agent runs become jobs of the worker kernel, leased like the
 * other queues, so that any node takes over one whose node died:
 * - an import's file is kept in the database (contact_import_files, in chunks) instead of
 *   under one node's data directory, and the import carries a cursor (the rows written), so
 *   another node resumes it after the last committed batch;
 * - both tables get lease_owner/lease_until (store/lease.ts).
 */
export const importAndAgentLeases = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('contact_import_files')
      .addColumn('import_id', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('data', blobType(dialect), (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('contact_import_files_pk', ['import_id', 'seq'])
      .execute();
    await db.schema
      .alterTable('contact_imports')
      .addColumn('cursor_row', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
    for (const table of ['contact_imports', 'inbox_agent_runs']) {
      await db.schema.alterTable(table).addColumn('lease_owner', 'text').execute();
      await db.schema.alterTable(table).addColumn('lease_until', 'bigint').execute();
    }
  },
  async down(db: Kysely<any>) {
    for (const table of ['contact_imports', 'inbox_agent_runs']) {
      await db.schema.alterTable(table).dropColumn('lease_until').execute();
      await db.schema.alterTable(table).dropColumn('lease_owner').execute();
    }
    await db.schema.alterTable('contact_imports').dropColumn('cursor_row').execute();
    await db.schema.dropTable('contact_import_files').execute();
  },
});
