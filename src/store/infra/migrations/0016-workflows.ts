import type { Kysely, Migration } from 'kysely';

/**
 * Workflows: definitions (each save a version, which the runs started from it keep), runs
 * (one row per contact and workflow execution: the queue the runner claims from, like
 * queue_items), the steps each run went through, and the trigger outbox that state changes
 * write in their own transaction so that no trigger is lost.
 */
export const workflows = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('workflows')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger_event', 'text', (c) => c.notNull())
      .addColumn('allow_reentry', 'integer', (c) => c.notNull())
      .addColumn('version_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('workflows_workspace').on('workflows').columns(['workspace_id', 'id']).execute();
    // Which enabled workflows an event starts (the trigger outbox asks on every event of a trigger type).
    await db.schema
      .createIndex('workflows_trigger')
      .on('workflows')
      .columns(['workspace_id', 'trigger_event', 'status'])
      .execute();

    await db.schema
      .createTable('workflow_versions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
      .addColumn('definition', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('workflow_versions_workflow').on('workflow_versions').column('workflow_id').execute();

    await db.schema
      .createTable('workflow_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
      .addColumn('version_id', 'text', (c) => c.notNull().references('workflow_versions.id').onDelete('cascade'))
      .addColumn('subscriber_id', 'text')
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('test', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('trigger_event', 'text', (c) => c.notNull())
      .addColumn('trigger_payload', 'text', (c) => c.notNull())
      .addColumn('wait_events', 'text', (c) => c.notNull())
      .addColumn('step_key', 'text')
      .addColumn('step_id', 'text')
      .addColumn('step_state', 'text')
      .addColumn('step_started_at', 'bigint')
      .addColumn('wait_event', 'text')
      .addColumn('next_at', 'bigint')
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('steps_taken', 'integer', (c) => c.notNull())
      .addColumn('exclusive_key', 'text', (c) => c.unique())
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('error', 'text')
      .addColumn('entered_at', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('completed_at', 'bigint')
      .execute();
    await db.schema.createIndex('workflow_runs_workflow').on('workflow_runs').columns(['workflow_id', 'id']).execute();
    // Whether a contact is in a run of a workflow (re-entry).
    await db.schema
      .createIndex('workflow_runs_contact')
      .on('workflow_runs')
      .columns(['workflow_id', 'subscriber_id'])
      .execute();
    await db.schema.createIndex('workflow_runs_due').on('workflow_runs').columns(['status', 'next_at']).execute();
    // Runs waiting for an event: does anything wait for this name, and which runs of this contact.
    await db.schema
      .createIndex('workflow_runs_waiting')
      .on('workflow_runs')
      .columns(['workspace_id', 'wait_event', 'subscriber_id'])
      .execute();
    await db.schema.createIndex('workflow_runs_completed').on('workflow_runs').column('completed_at').execute();

    await db.schema
      .createTable('workflow_run_steps')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('run_id', 'text', (c) => c.notNull().references('workflow_runs.id').onDelete('cascade'))
      .addColumn('step_key', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('output', 'text')
      .addColumn('error', 'text')
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('completed_at', 'bigint')
      .execute();
    await db.schema.createIndex('workflow_run_steps_run').on('workflow_run_steps').columns(['run_id', 'id']).execute();

    await db.schema
      .createTable('workflow_triggers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('event_name', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text')
      .addColumn('subscriber_id', 'text')
      .addColumn('email', 'text')
      .addColumn('contact_key', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('test', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .execute();
    // A contact's triggers are taken one at a time, oldest first.
    await db.schema
      .createIndex('workflow_triggers_contact')
      .on('workflow_triggers')
      .columns(['contact_key', 'id'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('workflow_triggers').execute();
    await db.schema.dropTable('workflow_run_steps').execute();
    await db.schema.dropTable('workflow_runs').execute();
    await db.schema.dropTable('workflow_versions').execute();
    await db.schema.dropTable('workflows').execute();
  },
});
