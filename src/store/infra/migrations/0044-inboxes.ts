import { sql, type Kysely, type Migration } from 'kysely';
import { blobType, type Dialect } from '../dialect.js';

/**
 * Inboxes as mail clients see them: the messages of an inbox (received and sent) grouped into
 * threads with a folder and read state, labels, drafts and the agent's settings. Search is a
 * real full-text index on each engine: an FTS5 table kept by triggers on SQLite, a generated
 * tsvector column with a GIN index on PostgreSQL.
 */
export const inboxes = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    const blob = blobType(dialect);

    await db.schema
      .createTable('inbox_threads')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('inbox_id', 'text', (c) => c.notNull().references('receiving_routes.id').onDelete('cascade'))
      .addColumn('subject', 'text')
      .addColumn('subject_key', 'text', (c) => c.notNull())
      .addColumn('folder', 'text', (c) => c.notNull())
      .addColumn('last_message_at', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('inbox_threads_activity')
      .on('inbox_threads')
      .columns(['inbox_id', 'last_message_at', 'id'])
      .execute();
    await db.schema
      .createIndex('inbox_threads_subject')
      .on('inbox_threads')
      .columns(['inbox_id', 'subject_key'])
      .execute();

    await db.schema
      .createTable('inbox_messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('inbox_id', 'text', (c) => c.notNull().references('receiving_routes.id').onDelete('cascade'))
      .addColumn('thread_id', 'text', (c) => c.notNull().references('inbox_threads.id').onDelete('cascade'))
      .addColumn('direction', 'text', (c) => c.notNull())
      // The message's own record: a received email (the thread loses it with it), or an email we
      // sent, which is filed in the transaction that queues it, before its row is written.
      .addColumn('received_email_id', 'text', (c) => c.references('received_emails.id').onDelete('cascade'))
      .addColumn('email_id', 'text')
      .addColumn('message_id', 'text')
      .addColumn('message_references', 'text', (c) => c.notNull())
      .addColumn('from_header', 'text', (c) => c.notNull())
      .addColumn('from_address', 'text')
      .addColumn('to_addresses', 'text', (c) => c.notNull())
      .addColumn('cc_addresses', 'text', (c) => c.notNull())
      .addColumn('bcc_addresses', 'text', (c) => c.notNull())
      .addColumn('reply_to', 'text', (c) => c.notNull())
      .addColumn('participants', 'text', (c) => c.notNull())
      .addColumn('subject', 'text')
      .addColumn('text', 'text')
      .addColumn('html', 'text')
      // What search reads of the body: the text part, else the HTML's text.
      .addColumn('search_text', 'text')
      .addColumn('attachments', 'text', (c) => c.notNull())
      .addColumn('has_attachment', 'integer', (c) => c.notNull())
      .addColumn('read', 'integer', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('inbox_messages_thread').on('inbox_messages').columns(['thread_id', 'at']).execute();
    await db.schema
      .createIndex('inbox_messages_message_id')
      .on('inbox_messages')
      .columns(['inbox_id', 'message_id'])
      .execute();
    await db.schema.createIndex('inbox_messages_received').on('inbox_messages').column('received_email_id').execute();
    await db.schema.createIndex('inbox_messages_email').on('inbox_messages').column('email_id').execute();

    if (dialect === 'postgres') {
      await sql`alter table inbox_messages add column search tsvector generated always as (to_tsvector('simple', coalesce(subject, '') || ' ' || participants || ' ' || coalesce(search_text, ''))) stored`.execute(
        db,
      );
      await sql`create index inbox_messages_search on inbox_messages using gin (search)`.execute(db);
    } else {
      // External content: the index holds the terms, inbox_messages the text; triggers keep them in step (cascaded deletes fire them too).
      await sql`create virtual table inbox_message_search using fts5(subject, participants, search_text, content='inbox_messages', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')`.execute(
        db,
      );
      await sql`create trigger inbox_messages_search_insert after insert on inbox_messages begin
        insert into inbox_message_search(rowid, subject, participants, search_text) values (new.rowid, new.subject, new.participants, new.search_text);
      end`.execute(db);
      await sql`create trigger inbox_messages_search_delete after delete on inbox_messages begin
        insert into inbox_message_search(inbox_message_search, rowid, subject, participants, search_text) values ('delete', old.rowid, old.subject, old.participants, old.search_text);
      end`.execute(db);
    }

    await db.schema
      .createTable('inbox_labels')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('inbox_id', 'text', (c) => c.notNull().references('receiving_routes.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('color', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('inbox_labels_name', ['inbox_id', 'name'])
      .execute();

    await db.schema
      .createTable('inbox_thread_labels')
      .addColumn('thread_id', 'text', (c) => c.notNull().references('inbox_threads.id').onDelete('cascade'))
      .addColumn('label_id', 'text', (c) => c.notNull().references('inbox_labels.id').onDelete('cascade'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('inbox_thread_labels_pk', ['thread_id', 'label_id'])
      .execute();
    await db.schema.createIndex('inbox_thread_labels_label').on('inbox_thread_labels').column('label_id').execute();

    await db.schema
      .createTable('inbox_drafts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('inbox_id', 'text', (c) => c.notNull().references('receiving_routes.id').onDelete('cascade'))
      .addColumn('thread_id', 'text', (c) => c.references('inbox_threads.id').onDelete('cascade'))
      .addColumn('reply_to_message_id', 'text')
      .addColumn('to_addresses', 'text')
      .addColumn('cc_addresses', 'text', (c) => c.notNull())
      .addColumn('bcc_addresses', 'text', (c) => c.notNull())
      .addColumn('subject', 'text')
      .addColumn('text', 'text')
      .addColumn('html', 'text')
      .addColumn('email_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('inbox_drafts_inbox')
      .on('inbox_drafts')
      .columns(['inbox_id', 'updated_at', 'id'])
      .execute();
    await db.schema.createIndex('inbox_drafts_thread').on('inbox_drafts').column('thread_id').execute();

    await db.schema
      .createTable('inbox_draft_attachments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('draft_id', 'text', (c) => c.notNull().references('inbox_drafts.id').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('filename', 'text', (c) => c.notNull())
      .addColumn('content_type', 'text', (c) => c.notNull())
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('content', blob, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('inbox_draft_attachments_draft')
      .on('inbox_draft_attachments')
      .column('draft_id')
      .execute();

    await db.schema
      .createTable('inbox_agents')
      .addColumn('inbox_id', 'text', (c) => c.primaryKey().references('receiving_routes.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('instructions', 'text')
      .addColumn('tone', 'text')
      .addColumn('actions', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('inbox_agents').execute();
    await db.schema.dropTable('inbox_draft_attachments').execute();
    await db.schema.dropTable('inbox_drafts').execute();
    await db.schema.dropTable('inbox_thread_labels').execute();
    await db.schema.dropTable('inbox_labels').execute();
    if (dialect === 'sqlite') {
      await sql`drop trigger inbox_messages_search_delete`.execute(db);
      await sql`drop trigger inbox_messages_search_insert`.execute(db);
      await sql`drop table inbox_message_search`.execute(db);
    }
    await db.schema.dropTable('inbox_messages').execute();
    await db.schema.dropTable('inbox_threads').execute();
  },
});
