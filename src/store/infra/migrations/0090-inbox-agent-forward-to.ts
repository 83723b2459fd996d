import type { Kysely, Migration } from 'kysely';

/**
 * The addresses an inbox's agent may forward to besides the workspace's verified domains (a
 * JSON array of addresses and "@domain" entries), chosen by the operator: a forward anywhere
 * else becomes a draft for a person (issue 32).
 */
export const inboxAgentForwardTo = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .alterTable('inbox_agents')
      .addColumn('forward_to', 'text', (c) => c.notNull().defaultTo('[]'))
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('inbox_agents').dropColumn('forward_to').execute();
  },
});
