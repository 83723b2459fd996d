import type { Kysely, Migration } from 'kysely';

/**
 * Deliverability: the last health checks of each domain, DMARC aggregate and TLS reports
 * received about our domains, the reputation guard's state per sending domain, and hourly
 * counts of what happened to mail (the overview's charts and `GET /v1/emails/metrics`).
 */
export const deliverability = (): Migration => ({
  async up(db: Kysely<any>) {
    // JSON: the checks of services/deliverability/domain-checks.ts, with when they ran.
    await db.schema.alterTable('domains').addColumn('checks', 'text').execute();

    await db.schema
      .createTable('dmarc_reports')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('domain', 'text', (c) => c.notNull())
      .addColumn('org_name', 'text', (c) => c.notNull())
      .addColumn('report_id', 'text', (c) => c.notNull())
      .addColumn('reporter_email', 'text')
      .addColumn('begin_at', 'bigint', (c) => c.notNull())
      .addColumn('end_at', 'bigint', (c) => c.notNull())
      .addColumn('policy', 'text', (c) => c.notNull())
      .addColumn('messages', 'integer', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      // A reporter that sends the same report twice (retries) stores it once.
      .addUniqueConstraint('dmarc_reports_unique', ['org_name', 'report_id', 'domain'])
      .execute();
    await db.schema.createIndex('dmarc_reports_domain').on('dmarc_reports').columns(['domain', 'begin_at']).execute();
    await db.schema.createIndex('dmarc_reports_received').on('dmarc_reports').column('received_at').execute();
    await db.schema
      .createTable('dmarc_report_records')
      .addColumn('report_id', 'text', (c) => c.notNull().references('dmarc_reports.id').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('source_ip', 'text', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addColumn('disposition', 'text', (c) => c.notNull())
      .addColumn('dkim', 'text', (c) => c.notNull())
      .addColumn('spf', 'text', (c) => c.notNull())
      .addColumn('header_from', 'text')
      .addColumn('envelope_from', 'text')
      .addColumn('auth_results', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('dmarc_report_records_pk', ['report_id', 'position'])
      .execute();

    await db.schema
      .createTable('tls_reports')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('domain', 'text', (c) => c.notNull())
      .addColumn('org_name', 'text', (c) => c.notNull())
      .addColumn('report_id', 'text', (c) => c.notNull())
      .addColumn('contact', 'text')
      .addColumn('begin_at', 'bigint', (c) => c.notNull())
      .addColumn('end_at', 'bigint', (c) => c.notNull())
      .addColumn('policy_type', 'text', (c) => c.notNull())
      .addColumn('successful', 'integer', (c) => c.notNull())
      .addColumn('failed', 'integer', (c) => c.notNull())
      .addColumn('failures', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('tls_reports_unique', ['org_name', 'report_id', 'domain', 'policy_type'])
      .execute();
    await db.schema.createIndex('tls_reports_domain').on('tls_reports').columns(['domain', 'begin_at']).execute();
    await db.schema.createIndex('tls_reports_received').on('tls_reports').column('received_at').execute();

    await db.schema
      .createTable('reputation_states')
      .addColumn('domain_id', 'text', (c) => c.primaryKey().references('domains.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('accepted', 'integer', (c) => c.notNull())
      .addColumn('bounces', 'integer', (c) => c.notNull())
      .addColumn('hard_bounces', 'integer', (c) => c.notNull())
      .addColumn('complaints', 'integer', (c) => c.notNull())
      .addColumn('reason', 'text')
      .addColumn('evaluated_at', 'bigint', (c) => c.notNull())
      .addColumn('changed_at', 'bigint', (c) => c.notNull())
      .addColumn('paused_at', 'bigint')
      .addColumn('resumed_at', 'bigint')
      .execute();
    await db.schema
      .createIndex('reputation_states_workspace')
      .on('reputation_states')
      .columns(['workspace_id', 'state'])
      .execute();

    await db.schema
      .createTable('stats_hourly')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('hour', 'bigint', (c) => c.notNull())
      .addColumn('domain_id', 'text', (c) => c.notNull())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('metric', 'text', (c) => c.notNull())
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('stats_hourly_pk', ['workspace_id', 'hour', 'domain_id', 'destination', 'metric'])
      .execute();
    await db.schema.createIndex('stats_hourly_hour').on('stats_hourly').column('hour').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('stats_hourly').execute();
    await db.schema.dropTable('reputation_states').execute();
    await db.schema.dropTable('tls_reports').execute();
    await db.schema.dropTable('dmarc_report_records').execute();
    await db.schema.dropTable('dmarc_reports').execute();
    await db.schema.alterTable('domains').dropColumn('checks').execute();
  },
});
