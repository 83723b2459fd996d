import type { Kysely, Migration } from 'kysely';

/**
 * A domain's own settings (Resend's `domains.update`): open and click tracking (null: the
 * server's `tracking.*` for marketing mail, off for transactional), the TLS policy of its mail
 * (`enforced`: STARTTLS or no delivery), the subdomain of its VERP return path (null:
 * `delivery.returnPathSubdomain`) and the tracking subdomain it names.
 */
export const domainSettings = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('domains').addColumn('open_tracking', 'integer').execute();
    await db.schema.alterTable('domains').addColumn('click_tracking', 'integer').execute();
    await db.schema
      .alterTable('domains')
      .addColumn('tls', 'text', (c) => c.notNull().defaultTo('opportunistic'))
      .execute();
    await db.schema.alterTable('domains').addColumn('return_path_subdomain', 'text').execute();
    await db.schema.alterTable('domains').addColumn('tracking_subdomain', 'text').execute();
  },
  async down(db: Kysely<any>) {
    for (const column of ['open_tracking', 'click_tracking', 'tls', 'return_path_subdomain', 'tracking_subdomain']) {
      await db.schema.alterTable('domains').dropColumn(column).execute();
    }
  },
});
