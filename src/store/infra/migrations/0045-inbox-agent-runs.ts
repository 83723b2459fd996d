import type { Kysely, Migration } from 'kysely';

/**
 * The inbox agent's work: one row per new message passed to the agent, with what the model
 * answered and what was carried out, kept on the thread as its record.
 */
export const inboxAgentRuns = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('inbox_agent_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('inbox_id', 'text', (c) => c.notNull().references('receiving_routes.id').onDelete('cascade'))
      .addColumn('thread_id', 'text', (c) => c.notNull().references('inbox_threads.id').onDelete('cascade'))
      .addColumn('message_id', 'text', (c) => c.notNull().references('inbox_messages.id').onDelete('cascade'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('actions', 'text')
      .addColumn('error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('inbox_agent_runs_due')
      .on('inbox_agent_runs')
      .columns(['status', 'next_attempt_at'])
      .execute();
    await db.schema
      .createIndex('inbox_agent_runs_thread')
      .on('inbox_agent_runs')
      .columns(['thread_id', 'created_at'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('inbox_agent_runs').execute();
  },
});
