import type { Generated } from 'kysely';

/** Emails, their content, the delivery queue (one row per recipient) and its attempts. */

export type EmailType = 'transactional' | 'marketing';
/** Where a message entered: the two HTTP surfaces, SMTP submission, a campaign, or a workflow's send step. */
/** Where a message came in; `dashboard`: mail the server sends for itself (an invitation). */
export type Intake = 'v1' | 'legacy' | 'smtp' | 'campaign' | 'workflow' | 'dashboard';

/**
 * Lifecycle of an email (DESIGN.md), derived from its recipients' queue items:
 * scheduled/queued -> sending -> delivered | deferred (retrying) | bounced | failed | cancelled | suppressed.
 * `held`: marketing mail of a sending domain the reputation guard paused; it waits until resumed.
 */
export const EMAIL_STATUSES = [
  'scheduled',
  'queued',
  'sending',
  'deferred',
  'held',
  'delivered',
  'bounced',
  'failed',
  'cancelled',
  'suppressed',
] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/**
 * A recipient's place in the queue. `queued` and `deferred` are due at next_attempt_at;
 * `held` waits, never claimed, until the reputation guard of its domain is resumed.
 */
export const QUEUE_STATUSES = [
  'queued',
  'sending',
  'deferred',
  'held',
  'delivered',
  'bounced',
  'failed',
  'cancelled',
  'suppressed',
] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];
export const FINAL_QUEUE_STATUSES: readonly QueueStatus[] = [
  'delivered',
  'bounced',
  'failed',
  'cancelled',
  'suppressed',
];

/** Queue priority: lower is sooner. Transactional mail over the soft limit is demoted. */
export const PRIORITY = { transactional: 0, marketing: 1 } as const;

export type AbPhase = 'test' | 'winner';

export interface EmailsTable {
  id: string;
  workspace_id: string;
  /** 1 when sent with a test key: simulated, never delivered. */
  test: number;
  type: EmailType;
  priority: number;
  status: EmailStatus;
  intake: Intake;
  domain_id: string | null;
  from_address: string;
  from_header: string;
  /** JSON arrays of addresses. */
  to_addresses: string;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  reply_to: string | null;
  subject: string;
  /** With angle brackets, on the sending domain. */
  message_id: string;
  template_id: string | null;
  campaign_id: string | null;
  subscriber_id: string | null;
  /** The A/B test variant (`A`…`E`) whose content the message carries; null outside a test. */
  variant: string | null;
  /** `test`: sent to the test group; `winner`: the winner sent to the rest; null outside a test. */
  ab_phase: AbPhase | null;
  /** JSON. */
  tags: string | null;
  metadata: string | null;
  external_id: string | null;
  track_opens: number;
  track_clicks: number;
  size: number;
  scheduled_at: number | null;
  created_at: number;
  updated_at: number;
  /** The IP pool it leaves through, chosen when it was accepted (null: the default, the system's address). */
  ip_pool_id: Generated<string | null>;
}

export interface EmailContentsTable {
  email_id: string;
  /** The composed RFC 5322 message, before DKIM signing. */
  raw: Buffer;
}

export interface QueueItemsTable {
  id: string;
  email_id: string;
  workspace_id: string;
  recipient: string;
  recipient_domain: string;
  status: QueueStatus;
  priority: number;
  test: number;
  attempts: number;
  next_attempt_at: number;
  /** The worker holding the item, until lease_until; an expired lease may be claimed again. */
  lease_owner: string | null;
  lease_until: number | null;
  last_code: number | null;
  last_response: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

export type AttemptOutcome = 'delivered' | 'deferred' | 'bounced' | 'failed';

export interface DeliveryAttemptsTable {
  id: string;
  queue_item_id: string;
  email_id: string;
  workspace_id: string;
  started_at: number;
  duration_ms: number;
  outcome: AttemptOutcome;
  /** Classification of the reply, e.g. mailbox_full, policy, dns. */
  category: string | null;
  mx_host: string | null;
  code: number | null;
  response: string | null;
  tls: number;
}
