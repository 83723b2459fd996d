import type { Kysely, Migration } from 'kysely';

/**
 * What a node's delivery gate reports per destination now says which destination: a
 * mailbox provider (or MX host, or domain of its own) seen from one source address, the
 * recipient domains lately delivered through it, its back-off state and limits, and the last
 * slow-down reply (GET /v1/delivery/providers, `mailsvc delivery status`, `queue list`).
 * `domain` holds the destination's key.
 */
export const destinationState = (): Migration => ({
  async up(db: Kysely<any>) {
    for (const [column, type] of [
      ['provider', 'text'],
      ['source', 'text'],
      ['domains', 'text'],
      ['state', 'text'],
      ['per_minute', 'integer'],
      ['limit_concurrency', 'integer'],
      ['limit_per_minute', 'integer'],
      ['last_reply', 'text'],
      ['last_reply_at', 'bigint'],
    ] as const) {
      await db.schema.alterTable('delivery_destinations').addColumn(column, type).execute();
    }
  },
  async down(db: Kysely<any>) {
    for (const column of [
      'last_reply_at',
      'last_reply',
      'limit_per_minute',
      'limit_concurrency',
      'per_minute',
      'state',
      'domains',
      'source',
      'provider',
    ]) {
      await db.schema.alterTable('delivery_destinations').dropColumn(column).execute();
    }
  },
});
