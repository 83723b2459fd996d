import type { Kysely, Migration } from 'kysely';

/** Emails by subscriber: the dashboard's subscriber page and `GET /v1/emails?subscriber_id=` read them without a scan. */
export const emailSubscriberIndex = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.createIndex('emails_subscriber').on('emails').columns(['subscriber_id', 'id']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('emails_subscriber').execute();
  },
});
