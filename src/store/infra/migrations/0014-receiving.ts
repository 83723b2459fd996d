import type { Kysely, Migration } from 'kysely';
import { blobType, type Dialect } from '../dialect.js';

/**
 * Receiving: routes (which addresses of a verified domain take mail, and what happens to
 * it), received messages with their parsed content and raw source, and an index to find a
 * domain by name alone (the inbound listener knows only the recipient's domain).
 */
export const receiving = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    const blob = blobType(dialect);

    await db.schema
      .createTable('receiving_routes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('domain_id', 'text', (c) => c.notNull().references('domains.id').onDelete('cascade'))
      .addColumn('local_part', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('name', 'text')
      .addColumn('from_name', 'text')
      .addColumn('last_received_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('receiving_routes_domain_local', ['domain_id', 'local_part'])
      .execute();
    await db.schema
      .createIndex('receiving_routes_workspace')
      .on('receiving_routes')
      .columns(['workspace_id', 'id'])
      .execute();
    // RCPT TO names a domain, not a workspace.
    await db.schema.createIndex('domains_name').on('domains').column('name').execute();

    await db.schema
      .createTable('received_emails')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('route_ids', 'text', (c) => c.notNull())
      .addColumn('envelope_from', 'text', (c) => c.notNull())
      .addColumn('recipients', 'text', (c) => c.notNull())
      .addColumn('from_header', 'text', (c) => c.notNull())
      .addColumn('from_address', 'text')
      .addColumn('to_addresses', 'text', (c) => c.notNull())
      .addColumn('cc_addresses', 'text', (c) => c.notNull())
      .addColumn('reply_to', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('sent_at', 'bigint')
      .addColumn('message_id', 'text')
      .addColumn('in_reply_to', 'text')
      .addColumn('message_references', 'text', (c) => c.notNull())
      .addColumn('authentication', 'text', (c) => c.notNull())
      .addColumn('in_reply_to_email_id', 'text')
      .addColumn('attachments', 'text', (c) => c.notNull())
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('remote_address', 'text', (c) => c.notNull())
      .addColumn('helo', 'text')
      .addColumn('tls', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('received_emails_workspace')
      .on('received_emails')
      .columns(['workspace_id', 'id'])
      .execute();
    await db.schema.createIndex('received_emails_created').on('received_emails').column('created_at').execute();

    await db.schema
      .createTable('received_email_contents')
      .addColumn('email_id', 'text', (c) => c.primaryKey().references('received_emails.id').onDelete('cascade'))
      .addColumn('raw', blob, (c) => c.notNull())
      .addColumn('text', 'text')
      .addColumn('html', 'text')
      .addColumn('headers', 'text', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('received_email_contents').execute();
    await db.schema.dropTable('received_emails').execute();
    await db.schema.dropIndex('domains_name').execute();
    await db.schema.dropTable('receiving_routes').execute();
  },
});
