import type { Generated } from 'kysely';

/** Contacts (subscribers), their tags, topics, segments (audiences), declared properties and imports. */

export type SubscriberStatus = 'subscribed' | 'unsubscribed';

export interface SubscribersTable {
  id: string;
  workspace_id: string;
  /** As given (domain lower-cased). */
  email: string;
  /** Lower-cased: one subscriber per address and workspace. */
  email_key: string;
  first_name: string | null;
  last_name: string | null;
  status: SubscriberStatus;
  domain_id: string | null;
  external_id: string | null;
  metadata: string | null;
  source: string;
  created_at: number;
  updated_at: number;
  unsubscribed_at: number | null;
}

export interface SubscriberTagsTable {
  subscriber_id: string;
  workspace_id: string;
  tag: string;
}

export type TopicSubscription = 'opt_in' | 'opt_out';

/** A subject subscribers opt in to or out of (Resend's topics); broadcasts may name one. */
export interface TopicsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  /** What a subscriber who never chose gets. */
  default_subscription: TopicSubscription;
  created_at: number;
  updated_at: number;
}

export interface SubscriberTopicsTable {
  subscriber_id: string;
  topic_id: string;
  subscription: TopicSubscription;
  updated_at: number;
}

export interface AudiencesTable {
  id: string;
  workspace_id: string;
  name: string;
  /** JSON array of conditions on contact properties (store/property-conditions.ts); null: none. */
  conditions: string | null;
  created_at: number;
}

export interface AudienceMembersTable {
  audience_id: string;
  subscriber_id: string;
  created_at: number;
}

/** A declared contact property: its key, its type and the value templates use when a contact has none. */
export interface ContactPropertiesTable {
  id: string;
  workspace_id: string;
  key: string;
  /** string, number, boolean or date (shared/typed-fields.ts). */
  type: string;
  /** JSON of the fallback value; null: none. */
  fallback_value: string | null;
  created_at: number;
}

/** A CSV of contacts being imported, with its counts and the first rows it could not take. */
export interface ContactImportsTable {
  id: string;
  workspace_id: string;
  /** queued, in_progress, completed, failed (the SDK's ContactImportStatus). */
  status: string;
  file_name: string | null;
  file_bytes: number;
  file_sha256: string;
  /** JSON: column_map, on_conflict, segments, topics as uploaded. */
  options: string;
  idempotency_key: string | null;
  total: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  /** JSON array of the first per-row errors: {row, reason}. */
  errors: string;
  /** Why the whole import failed (an unreadable CSV). */
  failure: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  /** Data rows of the file read and committed (written, or counted failed): another node resumes after them. */
  cursor_row: Generated<number>;
  lease_owner: Generated<string | null>;
  lease_until: Generated<number | null>;
}

/** An import's file, kept in the database in chunks so that any node can read it. */
export interface ContactImportFilesTable {
  import_id: string;
  seq: number;
  data: Buffer;
  created_at: number;
}
