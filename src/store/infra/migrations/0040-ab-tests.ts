import type { Kysely, Migration } from 'kysely';

/**
 * A/B tests and holdouts on campaigns (broadcasts). A campaign's variants are rows of their
 * own holding what each changes (null: the campaign's own); the test's settings and its winner are columns of the
 * campaign, and the wait for the winner is `winner_due_at`: a due time in the database, so it
 * survives restarts and is acted on once by whichever node runs the task. An email records
 * the variant it carries and whether it went out in the test or with the winner; the
 * contacts held out get nothing and are listed, so that the campaign's lift can be measured.
 */
export const abTests = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('campaign_variants')
      .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
      .addColumn('variant', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('name', 'text')
      .addColumn('subject', 'text')
      .addColumn('preview_text', 'text')
      .addColumn('from_name', 'text')
      .addColumn('html', 'text')
      .addColumn('text', 'text')
      .addColumn('template_id', 'text')
      .addPrimaryKeyConstraint('campaign_variants_pk', ['campaign_id', 'variant'])
      .execute();

    await db.schema
      .createTable('campaign_holdouts')
      .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
      .addColumn('subscriber_id', 'text', (c) => c.notNull().references('subscribers.id').onDelete('cascade'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('campaign_holdouts_pk', ['campaign_id', 'subscriber_id'])
      .execute();

    await db.schema
      .alterTable('campaigns')
      .addColumn('holdout_percentage', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    for (const [column, type] of [
      ['test_percentage', 'integer'],
      ['winner_metric', 'text'],
      ['test_duration_ms', 'bigint'],
      ['winner_due_at', 'bigint'],
      ['winner_variant', 'text'],
      ['winner_chosen_at', 'bigint'],
      ['winner_chosen_by', 'text'],
    ] as const) {
      await db.schema.alterTable('campaigns').addColumn(column, type).execute();
    }
    await db.schema.createIndex('campaigns_winner_due').on('campaigns').columns(['status', 'winner_due_at']).execute();

    await db.schema.alterTable('emails').addColumn('variant', 'text').execute();
    await db.schema.alterTable('emails').addColumn('ab_phase', 'text').execute();
    // The remainder of a test skips whoever already got a message of the campaign.
    await db.schema
      .createIndex('emails_campaign_subscriber')
      .on('emails')
      .columns(['campaign_id', 'subscriber_id'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('emails_campaign_subscriber').execute();
    await db.schema.alterTable('emails').dropColumn('ab_phase').execute();
    await db.schema.alterTable('emails').dropColumn('variant').execute();
    await db.schema.dropIndex('campaigns_winner_due').execute();
    for (const column of [
      'winner_chosen_by',
      'winner_chosen_at',
      'winner_variant',
      'winner_due_at',
      'test_duration_ms',
      'winner_metric',
      'test_percentage',
      'holdout_percentage',
    ]) {
      await db.schema.alterTable('campaigns').dropColumn(column).execute();
    }
    await db.schema.dropTable('campaign_holdouts').execute();
    await db.schema.dropTable('campaign_variants').execute();
  },
});
