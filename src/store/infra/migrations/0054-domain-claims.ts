import type { Kysely, Migration } from 'kysely';

/**
 * Claims of a domain other workspaces hold (Resend's `domains.claims`): the claimant publishes
 * a TXT record with the claim's token; once it is seen (and nothing blocks), the domain leaves
 * the other workspaces and is the claimant's.
 */
export const domainClaims = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('domain_claims')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('token', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('domain_id', 'text')
      .addColumn('blocked_reason', 'text')
      .addColumn('failure_reason', 'text')
      .addColumn('settings', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('domain_claims_workspace_name')
      .on('domain_claims')
      .columns(['workspace_id', 'name'])
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('domain_claims').execute();
  },
});
