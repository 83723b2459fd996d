import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Typed tables. Portable column types only, so one schema serves SQLite and PostgreSQL:
 * timestamps are epoch milliseconds (bigint), JSON is text, booleans are 0/1 integers.
 * Conversions to API shapes happen in services, never in SQL.
 */

export type Plan = 'starter' | 'professional' | 'enterprise';

export interface WorkspacesTable {
  id: string;
  name: string;
  plan: Plan;
  /** Custom limits (enterprise); null falls back to the plan's numbers. */
  transactional_per_second: number | null;
  marketing_per_second: number | null;
  default_from_email: string | null;
  created_at: number;
  /** An https URL of the logo shown with the name on the preference centre. */
  logo_url: Generated<string | null>;
  /** The IP pool of its mail when neither the message nor its sending domain names one (null: the default). */
  ip_pool_id: Generated<string | null>;
}

export type CredentialKind = 'live' | 'test' | 'oauth';

/** API keys (sk_live_, sk_test_, master) and OAuth access tokens (oat_): secrets kept as SHA-256. */
export interface CredentialsTable {
  id: string;
  /** null for master keys, which reach every workspace. */
  workspace_id: string | null;
  kind: CredentialKind;
  master: number;
  name: string;
  /** The first characters of the secret, shown in lists to tell keys apart. */
  prefix: string;
  secret_hash: string;
  /** JSON array of scopes for OAuth tokens; null means every scope (API keys). */
  scopes: string | null;
  expires_at: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
  /** A key that may send only from this domain (Resend's `domain_id` restriction). */
  domain_id: string | null;
}

export type DomainStatus = 'pending' | 'verified';

export interface DomainsTable {
  id: string;
  workspace_id: string;
  name: string;
  status: DomainStatus;
  external_id: string | null;
  metadata: string | null;
  created_at: number;
  verified_at: number | null;
  last_checked_at: number | null;
  /** Why the last DNS check did not verify the domain, for the user to act on. */
  last_check_error: string | null;
  /** JSON: the last deliverability checks (services/deliverability/domain-checks.ts); null until first run. */
  checks: string | null;
  /** The IP pool of mail from this domain when the message names none (null: the workspace's). */
  ip_pool_id: Generated<string | null>;
  /** 0/1; null: the server's tracking.opens for marketing mail, off for transactional. */
  open_tracking: number | null;
  /** 0/1; null: the server's tracking.clicks for marketing mail, off for transactional. */
  click_tracking: number | null;
  /** enforced: its mail goes over STARTTLS or not at all. */
  tls: DomainTls;
  /** The VERP return path's subdomain; null: delivery.returnPathSubdomain. */
  return_path_subdomain: string | null;
  tracking_subdomain: string | null;
}

export const DOMAIN_TLS = ['opportunistic', 'enforced'] as const;
export type DomainTls = (typeof DOMAIN_TLS)[number];

/** One row per DKIM token: the token is the selector, with its own key pair. */
export interface DkimKeysTable {
  selector: string;
  domain_id: string;
  position: number;
  /** PKCS#8 PEM, encrypted with the instance secret key (see shared/crypto.ts). */
  private_key_sealed: string;
  /** Base64 of the SubjectPublicKeyInfo DER: the p= of the DKIM TXT record. */
  public_key: string;
  created_at: number;
}

export type EmailType = 'transactional' | 'marketing';
/** Where a message entered: the two HTTP surfaces, SMTP submission, a campaign, or a workflow's send step. */
export type Intake = 'v1' | 'legacy' | 'smtp' | 'campaign' | 'workflow';

/**
 * Lifecycle of an email (DESIGN.md), derived from its recipients' queue items:
 * scheduled/queued -> sending -> delivered | deferred (retrying) | bounced | failed | cancelled | suppressed.
 * `held`: marketing mail of a sending domain the reputation guard paused; it waits until resumed.
 */
export const EMAIL_STATUSES = ['scheduled', 'queued', 'sending', 'deferred', 'held', 'delivered', 'bounced', 'failed', 'cancelled', 'suppressed'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/**
 * A recipient's place in the queue. `queued` and `deferred` are due at next_attempt_at;
 * `held` waits, never claimed, until the reputation guard of its domain is resumed.
 */
export const QUEUE_STATUSES = ['queued', 'sending', 'deferred', 'held', 'delivered', 'bounced', 'failed', 'cancelled', 'suppressed'] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];
export const FINAL_QUEUE_STATUSES: readonly QueueStatus[] = ['delivered', 'bounced', 'failed', 'cancelled', 'suppressed'];

/** Queue priority: lower is sooner. Transactional mail over the soft limit is demoted. */
export const PRIORITY = { transactional: 0, marketing: 1 } as const;

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

export interface EventsTable {
  /** The order events were written in, assigned by the database (0020-event-order). */
  seq: Generated<number>;
  /** `evt_…`. */
  id: string;
  workspace_id: string;
  type: string;
  email_id: string | null;
  /** JSON: every field any surface renders; webhooks pick their surface's fields. */
  data: string;
  created_at: number;
}

export const DOMAIN_CLAIM_STATUSES = ['pending', 'verified', 'completed', 'blocked', 'expired', 'superseded', 'canceled', 'failed'] as const;
export type DomainClaimStatus = (typeof DOMAIN_CLAIM_STATUSES)[number];
export type DomainClaimBlockedReason = 'grace_period' | 'recent_owner_activity' | 'pending_scheduled_emails';

/** A workspace's claim of a domain other workspaces hold, proved by a TXT record. */
export interface DomainClaimsTable {
  id: string;
  workspace_id: string;
  name: string;
  /** The value the claimant publishes: mailsvc-claim=<token>. */
  token: string;
  status: DomainClaimStatus;
  /** The claimant's domain once the claim completed. */
  domain_id: string | null;
  blocked_reason: DomainClaimBlockedReason | null;
  failure_reason: string | null;
  /** JSON: the domain settings to apply once it is the claimant's (tracking, return path). */
  settings: string | null;
  created_at: number;
  expires_at: number;
}

/** A declared contact property: its key, its type and the value templates use when a contact has none. */
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
}

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

/** A declared custom event: its name and the types of its payload's fields. */
export interface EventDefinitionsTable {
  id: string;
  workspace_id: string;
  name: string;
  /** JSON object field name -> string | number | boolean | date; null: any payload. */
  schema: string | null;
  created_at: number;
  updated_at: number | null;
}

/** One authenticated API request (Resend's logs); bodies are JSON with secrets and attachment content redacted. */
export interface ApiLogsTable {
  id: string;
  workspace_id: string;
  credential_id: string | null;
  request_id: string | null;
  method: string;
  endpoint: string;
  response_status: number;
  user_agent: string | null;
  request_body: string | null;
  response_body: string | null;
  created_at: number;
}

export interface IdempotencyKeysTable {
  workspace_id: string;
  key: string;
  request_hash: string;
  state: 'in_flight' | 'done';
  response_status: number | null;
  response_body: string | null;
  created_at: number;
  /** While in flight, others get 409; past it, a crashed request's claim may be taken over. */
  locked_until: number;
}

export interface TemplatesTable {
  id: string;
  workspace_id: string;
  name: string;
  subject: string;
  html: string;
  text: string | null;
  /** Resend's template alias: another name to send or read the template by. */
  alias: string | null;
  /** Defaults for mail sent with the template. */
  from_address: string | null;
  /** JSON array of addresses. */
  reply_to: string | null;
  /** JSON array of `{key, type, fallback_value}`: values used when a send gives none. */
  variables: string | null;
  /** JSON `{subject, html, text, from, reply_to, variables}`: the version mail is sent with, once published. */
  published: string | null;
  published_at: number | null;
  created_at: number;
  updated_at: number;
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

export type SuppressionScope = 'all' | 'marketing';

export interface SuppressionsTable {
  workspace_id: string;
  /** A lower-cased address, or `@domain` for a whole domain. */
  address: string;
  scope: SuppressionScope;
  reason: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';
  detail: string | null;
  email_id: string | null;
  created_at: number;
}

/** Which API surface registered an endpoint: it decides signing, payload fields and retries. */
export type WebhookSurface = 'legacy' | 'v1';
export type WebhookEndpointStatus = 'enabled' | 'disabled';
/** manual: PATCH status; gone: the endpoint answered 410; failing: it failed for webhooks.disableAfterSeconds. */
export const WEBHOOK_DISABLED_REASONS = ['manual', 'gone', 'failing'] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];

export interface WebhookEndpointsTable {
  id: string;
  workspace_id: string;
  surface: WebhookSurface;
  url: string;
  /** JSON array of event types; `["*"]` is every type. */
  events: string;
  description: string | null;
  /** The signing secret, encrypted with the instance key (it must stay usable for HMAC). */
  secret_sealed: string;
  /** Last characters of the secret, to tell secrets apart in a masked listing. */
  secret_hint: string;
  /** After a rotation, the secret it replaced, also valid until previous_secret_expires_at. */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: number | null;
  status: WebhookEndpointStatus;
  disabled_reason: WebhookDisabledReason | null;
  disabled_at: number | null;
  /** Start of the current run of failed attempts; null after any success. */
  failing_since: number | null;
  last_success_at: number | null;
  last_failure_at: number | null;
  created_at: number;
  updated_at: number;
}

/** pending: due at next_attempt_at (in flight while leased); then succeeded or failed. */
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** The outbox: one row per event × endpoint, written in the event's transaction. */
export interface WebhookDeliveriesTable {
  /** `msg_…`: the webhook-id header, the same on every attempt so receivers can deduplicate. */
  id: string;
  endpoint_id: string;
  workspace_id: string;
  event_id: string;
  event_type: string;
  status: WebhookDeliveryStatus;
  /** Every attempt made, replays included. */
  attempt_count: number;
  /** Attempts since the run started (creation or replay): the position in the retry schedule. */
  run_attempts: number;
  next_attempt_at: number;
  run_started_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  last_response: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

export type WebhookAttemptOutcome = 'succeeded' | 'failed';

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  workspace_id: string;
  /** 1-based number among all attempts of the delivery. */
  attempt: number;
  started_at: number;
  duration_ms: number;
  outcome: WebhookAttemptOutcome;
  /** HTTP status; null when no response came (timeout, refused connection, blocked address). */
  status_code: number | null;
  error: string | null;
  /** The first bytes of the response body. */
  response: string | null;
  /** When the next attempt is due, if this one scheduled a retry. */
  next_attempt_at: number | null;
}

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

/**
 * draft: not sent yet (a broadcast being written); queuing: recipients are being written to
 * the queue (from scheduled_at, when set); testing: an A/B test's variants are queued and it
 * waits for its winner (until winner_due_at), then is queued again for the rest; sending: all
 * queued; sent: all finished; cancelled: stopped, what was still queued is cancelled.
 */
export const CAMPAIGN_STATUSES = ['draft', 'queuing', 'testing', 'sending', 'sent', 'cancelled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export interface CampaignsTable {
  id: string;
  workspace_id: string;
  name: string;
  status: CampaignStatus;
  subject: string;
  from_name: string;
  from_email: string;
  html: string | null;
  text: string | null;
  /** JSON array of addresses. */
  reply_to: string | null;
  /** The preheader: shown beside the subject in inboxes, hidden in the message. */
  preview_text: string | null;
  template_id: string | null;
  /** Only subscribers not opted out of this topic. */
  topic_id: string | null;
  /** Queuing starts at this time; null: as soon as it is sent. */
  scheduled_at: number | null;
  /** JSON array: subscribers having any of these tags; null for all. */
  tags: string | null;
  audience_id: string | null;
  variables: string | null;
  external_id: string | null;
  metadata: string | null;
  /** The IP pool its messages leave through; null: their domain's or workspace's. */
  ip_pool_id: Generated<string | null>;
  test: number;
  /** Subscribers selected when the campaign was accepted. */
  recipients: number;
  /** Messages queued so far. */
  queued: number;
  /** The last subscriber id queued: queuing resumes after it after a restart. */
  cursor: string | null;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: number;
  updated_at: number | null;
  queued_at: number | null;
  sent_at: number | null;
  cancelled_at: number | null;
  /** Percent of the recipients who get nothing (to measure the campaign's lift); 0: none. */
  holdout_percentage: number;
  /** Percent of the recipients the variants go to, split evenly; null: no A/B test. */
  test_percentage: number | null;
  winner_metric: WinnerMetric | null;
  test_duration_ms: number | null;
  /** When the winner is chosen by the metric; set once the variants are queued. */
  winner_due_at: number | null;
  winner_variant: string | null;
  winner_chosen_at: number | null;
  winner_chosen_by: WinnerChoice | null;
}

export type AbPhase = 'test' | 'winner';
/** What an A/B test is decided on: people's opens or clicks, per message delivered. */
export const WINNER_METRICS = ['human_open_rate', 'human_click_rate'] as const;
export type WinnerMetric = (typeof WINNER_METRICS)[number];
/** metric: the better rate; tie: no variant was ahead, the first was taken; manual: chosen by hand. */
export type WinnerChoice = 'metric' | 'tie' | 'manual';

/** One variant of an A/B test: what it changes of the campaign's content (null: the campaign's own). */
export interface CampaignVariantsTable {
  campaign_id: string;
  /** `A` to `E`, in the order given. */
  variant: string;
  position: number;
  name: string | null;
  subject: string | null;
  preview_text: string | null;
  from_name: string | null;
  /** A template's content is copied here when the variant is saved, as a campaign's is. */
  html: string | null;
  text: string | null;
  template_id: string | null;
}

/** A contact held out of a campaign: sent nothing, kept to compare with those who were. */
export interface CampaignHoldoutsTable {
  campaign_id: string;
  subscriber_id: string;
  created_at: number;
}

/** A signed-in dashboard browser; the cookie holds the secret, the row its SHA-256. */
export interface DashboardSessionsTable {
  id_hash: string;
  /** The workspace the dashboard shows (null: the default one). */
  workspace_id: string | null;
  created_at: number;
  expires_at: number;
}

/** A one-time login link printed by `mailsvc dashboard login`. */
export interface DashboardLoginTokensTable {
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** One fixed window of one rate-limit key, shared by every node. */
export interface RateLimitWindowsTable {
  /** The limiter's key, including the window length. */
  key: string;
  window_start: number;
  count: number;
  /** When the window is over and the row may be deleted. */
  expires_at: number;
}

/** How a route's address matches: one address, a local-part pattern (`reply+*`), or the whole domain (`*`). */
export const ROUTE_KINDS = ['address', 'pattern', 'catch_all'] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];
/** webhook: stored and `email.received` emitted; store: stored only; reject: refused at RCPT TO. */
export const ROUTE_ACTIONS = ['webhook', 'store', 'reject'] as const;
export type RouteAction = (typeof ROUTE_ACTIONS)[number];

/** Which addresses of a workspace's domain take mail; Resend's inboxes are the `address` routes. */
export interface ReceivingRoutesTable {
  id: string;
  workspace_id: string;
  domain_id: string;
  /** Lower-cased: `support`, `reply+*`, or `*` for the catch-all. */
  local_part: string;
  kind: RouteKind;
  action: RouteAction;
  name: string | null;
  /** The display name replies from this inbox would use (Resend's inbox field). */
  from_name: string | null;
  last_received_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A message taken by the inbound listener for one workspace's routes. */
export interface ReceivedEmailsTable {
  id: string;
  workspace_id: string;
  /** JSON array: the routes that took it (one per recipient, de-duplicated). */
  route_ids: string;
  /** MAIL FROM; empty for a null sender. */
  envelope_from: string;
  /** JSON array: the RCPT TO addresses of this workspace. */
  recipients: string;
  /** The From header as a display string. */
  from_header: string;
  from_address: string | null;
  /** JSON arrays of addresses. */
  to_addresses: string;
  cc_addresses: string;
  reply_to: string;
  subject: string;
  /** The Date header. */
  sent_at: number | null;
  message_id: string | null;
  in_reply_to: string | null;
  /** JSON array of Message-IDs. */
  message_references: string;
  /** JSON: SPF, DKIM, DMARC and ARC results (see receiving/routes/authenticate-message.ts). */
  authentication: string;
  /** The email we sent that this message answers, when its In-Reply-To or References name it. */
  in_reply_to_email_id: string | null;
  /** JSON array of attachment descriptions; the bytes stay in the raw message. */
  attachments: string;
  size: number;
  remote_address: string;
  helo: string | null;
  tls: number;
  created_at: number;
}

export interface ReceivedEmailContentsTable {
  email_id: string;
  /** The message exactly as received. */
  raw: Buffer;
  text: string | null;
  html: string | null;
  /** JSON array of [name, value] in message order. */
  headers: string;
}

/** Where a thread of an inbox is filed (Resend's folders); `sent` holds threads we started. */
export const INBOX_FOLDERS = ['inbox', 'archive', 'spam', 'sent', 'trash'] as const;
export type InboxFolder = (typeof INBOX_FOLDERS)[number];

export interface InboxThreadsTable {
  id: string;
  workspace_id: string;
  /** The inbox: a receiving route for one address. */
  inbox_id: string;
  subject: string | null;
  /** The subject without reply and forward prefixes, lower case: the fallback of threading. */
  subject_key: string;
  folder: InboxFolder;
  last_message_at: number;
  created_at: number;
  updated_at: number;
}

export interface InboxMessagesTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  thread_id: string;
  direction: 'inbound' | 'outbound';
  received_email_id: string | null;
  email_id: string | null;
  /** With angle brackets. */
  message_id: string | null;
  /** JSON array: In-Reply-To and References, oldest first. */
  message_references: string;
  from_header: string;
  from_address: string | null;
  /** JSON arrays of addresses. */
  to_addresses: string;
  cc_addresses: string;
  bcc_addresses: string;
  reply_to: string;
  /** Every address of the message, space separated: what search matches participants in. */
  participants: string;
  subject: string | null;
  text: string | null;
  html: string | null;
  /** What search reads of the body: the text part, else the HTML's text. */
  search_text: string | null;
  /** JSON array of { id, filename, content_type, size }. */
  attachments: string;
  has_attachment: number;
  read: number;
  /** When it was received or sent. */
  at: number;
  created_at: number;
}

export interface InboxLabelsTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  name: string;
  /** #RRGGBB. */
  color: string;
  created_at: number;
}

export interface InboxThreadLabelsTable {
  thread_id: string;
  label_id: string;
  created_at: number;
}

export interface InboxDraftsTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  /** A reply draft's thread and the message it answers; null for a standalone draft. */
  thread_id: string | null;
  reply_to_message_id: string | null;
  /** JSON arrays; `to` is null until set. */
  to_addresses: string | null;
  cc_addresses: string;
  bcc_addresses: string;
  subject: string | null;
  text: string | null;
  html: string | null;
  /** The email it became once sent. */
  email_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface InboxDraftAttachmentsTable {
  id: string;
  draft_id: string;
  position: number;
  filename: string;
  content_type: string;
  size: number;
  content: Buffer;
}

/** pending: waiting for the agent (again, after a failed try); running: with the agent now; done; failed: tries ran out. */
export type InboxAgentRunStatus = 'pending' | 'running' | 'done' | 'failed';

export interface InboxAgentRunsTable {
  id: string;
  workspace_id: string;
  inbox_id: string;
  thread_id: string;
  /** The inbox message that started it. */
  message_id: string;
  status: InboxAgentRunStatus;
  attempts: number;
  next_attempt_at: number;
  started_at: number | null;
  /** JSON array of { type, …, result }: what the agent asked for and what became of it. */
  actions: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
}

export interface InboxAgentsTable {
  inbox_id: string;
  workspace_id: string;
  instructions: string | null;
  tone: string | null;
  /** JSON array of action names. */
  actions: string;
  updated_at: number;
}

/** draft: saved, never enabled; enabled: events start runs; disabled: stopped (no new runs). */
export const WORKFLOW_STATUSES = ['draft', 'enabled', 'disabled'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

export interface WorkflowsTable {
  id: string;
  workspace_id: string;
  name: string;
  status: WorkflowStatus;
  /** The trigger step's event name, kept here so an event finds its workflows by index. */
  trigger_event: string;
  /** 1: a contact may be in several runs of the workflow at once. */
  allow_reentry: number;
  /** The current definition; runs keep the version they started with. */
  version_id: string;
  created_at: number;
  updated_at: number;
}

export interface WorkflowVersionsTable {
  id: string;
  workflow_id: string;
  /** JSON `{steps, connections}`, as validated when saved. */
  definition: string;
  created_at: number;
}

/** Resend's run statuses. */
export const WORKFLOW_RUN_STATUSES = ['running', 'completed', 'failed', 'cancelled'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];
/** ready: due to execute at next_at; waiting: held by a delay or wait until next_at (or an event); event_received: a wait's event came. */
export type WorkflowStepState = 'ready' | 'waiting' | 'event_received';

/** One execution of a workflow for one contact; also its place in the runner's queue. */
export interface WorkflowRunsTable {
  id: string;
  workspace_id: string;
  workflow_id: string;
  version_id: string;
  /** null when the trigger named no contact that exists any more. */
  subscriber_id: string | null;
  /** The contact's address when the run started. */
  email: string;
  /** Started by an event sent with a test key (or about test mail): its emails are simulated. */
  test: number;
  status: WorkflowRunStatus;
  trigger_event: string;
  /** JSON: the triggering event's payload (`event.*`). */
  trigger_payload: string;
  /** JSON: payloads of events received by wait steps, by name (`wait_events.*`). */
  wait_events: string;
  /** The step the run is at, and its row in workflow_run_steps; null once finished. */
  step_key: string | null;
  step_id: string | null;
  step_state: WorkflowStepState | null;
  step_started_at: number | null;
  /** The event a wait step waits for: events for the contact with this name resume the run. */
  wait_event: string | null;
  /** When the run is due (a step to execute, a delay or timeout over); null: waits for an event only, or finished. */
  next_at: number | null;
  /** Failed attempts of the current step (they are retried with backoff). */
  attempts: number;
  /** Steps entered so far: a bound on runaway loops. */
  steps_taken: number;
  /** `workflow:contact` while running without re-entry: unique, so a contact is in one run at a time. */
  exclusive_key: string | null;
  lease_owner: string | null;
  lease_until: number | null;
  error: string | null;
  /** When the triggering event happened. */
  entered_at: number;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

/** Resend's run step statuses. */
export const WORKFLOW_RUN_STEP_STATUSES = ['pending', 'running', 'completed', 'failed', 'skipped', 'waiting'] as const;
export type WorkflowRunStepStatus = (typeof WORKFLOW_RUN_STEP_STATUSES)[number];

/** One step a run went through (a step visited twice in a loop has two rows). */
export interface WorkflowRunStepsTable {
  id: string;
  run_id: string;
  step_key: string;
  type: string;
  status: WorkflowRunStepStatus;
  /** JSON: what the step did (the email id, the branch taken, why it was skipped). */
  output: string | null;
  /** JSON `{message, code}` of the last failure. */
  error: string | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
}

/**
 * The trigger outbox: an event that may start or resume runs, written in the transaction of
 * the state change it reports (or of POST /v1/events/send) and consumed by the runner.
 */
export interface WorkflowTriggersTable {
  id: string;
  workspace_id: string;
  event_name: string;
  /** The platform event (`evt_…`) this trigger reports; null for custom events. */
  event_id: string | null;
  subscriber_id: string | null;
  email: string | null;
  /** `<workspace>:<lower-cased address>`: a contact's triggers are acted on one at a time, in order. */
  contact_key: string;
  /** JSON object. */
  payload: string;
  test: number;
  created_at: number;
  lease_owner: string | null;
  lease_until: number | null;
}

/** One DMARC aggregate report (RFC 7489 §7.2) about one of our domains, as a receiver sent it. */
export interface DmarcReportsTable {
  id: string;
  /** The policy domain (policy_published/domain), lower-cased. */
  domain: string;
  org_name: string;
  report_id: string;
  reporter_email: string | null;
  begin_at: number;
  end_at: number;
  /** JSON: the policy the receiver saw (p, sp, pct, adkim, aspf). */
  policy: string;
  /** Messages covered (the sum of the records' counts). */
  messages: number;
  received_at: number;
}

/** One row of a DMARC report: messages from one source IP with one evaluation. */
export interface DmarcReportRecordsTable {
  report_id: string;
  position: number;
  source_ip: string;
  count: number;
  /** none, quarantine, reject: what the receiver did. */
  disposition: string;
  /** pass or fail: DKIM and SPF as evaluated for DMARC (aligned). */
  dkim: string;
  spf: string;
  header_from: string | null;
  envelope_from: string | null;
  /** JSON: {dkim: [{domain, selector, result}], spf: [{domain, scope, result}]} (raw, unaligned results). */
  auth_results: string;
}

/** One policy's summary from a TLS report (RFC 8460) about one of our domains. */
export interface TlsReportsTable {
  id: string;
  domain: string;
  org_name: string;
  report_id: string;
  contact: string | null;
  begin_at: number;
  end_at: number;
  /** sts, tlsa or no-policy-found. */
  policy_type: string;
  successful: number;
  failed: number;
  /** JSON: [{result_type, sending_mta_ip, receiving_mx_hostname, receiving_ip, failed_session_count, failure_reason_code}]. */
  failures: string;
  received_at: number;
}

/** sending: marketing flows; warning: a rate crossed its warning threshold; paused: marketing mail is held. */
export const REPUTATION_STATES = ['sending', 'warning', 'paused'] as const;
export type ReputationState = (typeof REPUTATION_STATES)[number];

/** The reputation guard's view of one sending domain: its counts over the window when last evaluated. */
export interface ReputationStatesTable {
  domain_id: string;
  workspace_id: string;
  state: ReputationState;
  /** Messages the recipient's server accepted (email.sent) in the window. */
  accepted: number;
  /** Messages bounced in the window, hard and soft. */
  bounces: number;
  hard_bounces: number;
  complaints: number;
  /** Tracked marketing messages delivered in the window; of them, opened by anyone and by people. */
  tracked: Generated<number>;
  opened: Generated<number>;
  human_opened: Generated<number>;
  /** Why the state is what it is, in words. */
  reason: string | null;
  evaluated_at: number;
  changed_at: number;
  paused_at: number | null;
  /** When an operator resumed; rates count only what happened after it. */
  resumed_at: number | null;
}

/** Hourly counts (UTC hours) per workspace, sending domain ('' none) and destination class ('' all). */
export interface StatsHourlyTable {
  workspace_id: string;
  hour: number;
  domain_id: string;
  destination: string;
  metric: string;
  count: number;
  /** 1: test mail (test keys), kept apart so that live figures never include it. */
  test: number;
}

export interface Database {
  workspaces: WorkspacesTable;
  credentials: CredentialsTable;
  domains: DomainsTable;
  dkim_keys: DkimKeysTable;
  emails: EmailsTable;
  email_contents: EmailContentsTable;
  queue_items: QueueItemsTable;
  delivery_attempts: DeliveryAttemptsTable;
  events: EventsTable;
  api_logs: ApiLogsTable;
  event_definitions: EventDefinitionsTable;
  contact_properties: ContactPropertiesTable;
  contact_imports: ContactImportsTable;
  domain_claims: DomainClaimsTable;
  idempotency_keys: IdempotencyKeysTable;
  templates: TemplatesTable;
  suppressions: SuppressionsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  subscribers: SubscribersTable;
  subscriber_tags: SubscriberTagsTable;
  audiences: AudiencesTable;
  audience_members: AudienceMembersTable;
  topics: TopicsTable;
  subscriber_topics: SubscriberTopicsTable;
  campaigns: CampaignsTable;
  campaign_variants: CampaignVariantsTable;
  campaign_holdouts: CampaignHoldoutsTable;
  dashboard_sessions: DashboardSessionsTable;
  dashboard_login_tokens: DashboardLoginTokensTable;
  rate_limit_windows: RateLimitWindowsTable;
  receiving_routes: ReceivingRoutesTable;
  received_emails: ReceivedEmailsTable;
  received_email_contents: ReceivedEmailContentsTable;
  inbox_threads: InboxThreadsTable;
  inbox_messages: InboxMessagesTable;
  inbox_labels: InboxLabelsTable;
  inbox_thread_labels: InboxThreadLabelsTable;
  inbox_drafts: InboxDraftsTable;
  inbox_draft_attachments: InboxDraftAttachmentsTable;
  inbox_agents: InboxAgentsTable;
  inbox_agent_runs: InboxAgentRunsTable;
  workflows: WorkflowsTable;
  workflow_versions: WorkflowVersionsTable;
  workflow_runs: WorkflowRunsTable;
  workflow_run_steps: WorkflowRunStepsTable;
  workflow_triggers: WorkflowTriggersTable;
  dmarc_reports: DmarcReportsTable;
  dmarc_report_records: DmarcReportRecordsTable;
  tls_reports: TlsReportsTable;
  reputation_states: ReputationStatesTable;
  stats_hourly: StatsHourlyTable;
  instance: InstanceTable;
  delivery_destinations: DeliveryDestinationsTable;
  ip_pools: IpPoolsTable;
  ip_pool_addresses: IpPoolAddressesTable;
  ip_warmups: IpWarmupsTable;
  warmup_counts: WarmupCountsTable;
}

/** An address in warm-up (docs/deliverability.md, Warm-up). */
export interface IpWarmupsTable {
  address: string;
  started_at: number;
  /** JSON array of daily caps per provider; null: the default schedule (delivery.warmup). */
  schedule: string | null;
}

/** Messages an address in warm-up sent to one provider on one warm-up day. */
export interface WarmupCountsTable {
  address: string;
  provider: string;
  period_start: number;
  count: number;
}

/** A named set of source addresses that mail leaves from (docs/deliverability.md, IP pools). */
export interface IpPoolsTable {
  id: string;
  name: string;
  created_at: number;
  updated_at: number;
}

/** One source address of a pool, with the EHLO name it greets with (matching its PTR). */
export interface IpPoolAddressesTable {
  pool_id: string;
  address: string;
  ehlo: string;
  position: number;
}

/** Facts about the database itself (the secret key's check value). */
export interface InstanceTable {
  key: string;
  value: string;
  created_at: number;
}

/** What one node's delivery gate holds for one destination, written a few times a minute. */
export interface DeliveryDestinationsTable {
  /** The node's lease owner id. */
  owner: string;
  domain: string;
  active: number;
  allowed: number;
  waiting: number;
  paused_until: number | null;
  hold: 'paused' | 'concurrency' | 'rate' | null;
  updated_at: number;
  /** The mailbox provider (or MX host, or domain of its own) the destination's limits apply to. */
  provider: Generated<string | null>;
  /** The source address; null: the system's. */
  source: Generated<string | null>;
  /** Recipient domains lately delivered through it, space-separated. */
  domains: Generated<string | null>;
  state: Generated<'normal' | 'backoff' | 'paused' | null>;
  /** Messages per minute allowed now (lowered in back-off). */
  per_minute: Generated<number | null>;
  limit_concurrency: Generated<number | null>;
  limit_per_minute: Generated<number | null>;
  last_reply: Generated<string | null>;
  last_reply_at: Generated<number | null>;
}

export type Workspace = Selectable<WorkspacesTable>;
export type Credential = Selectable<CredentialsTable>;
export type NewCredential = Insertable<CredentialsTable>;
export type Domain = Selectable<DomainsTable>;
export type ApiLog = Selectable<ApiLogsTable>;
export type EventDefinition = Selectable<EventDefinitionsTable>;
export type ContactProperty = Selectable<ContactPropertiesTable>;
export type ContactImport = Selectable<ContactImportsTable>;
export type DomainClaim = Selectable<DomainClaimsTable>;
export type DomainUpdate = Updateable<DomainsTable>;
export type DkimKey = Selectable<DkimKeysTable>;
export type Email = Selectable<EmailsTable>;
export type QueueItem = Selectable<QueueItemsTable>;
export type DeliveryAttempt = Selectable<DeliveryAttemptsTable>;
export type EventRow = Selectable<EventsTable>;
/** An event as written: the database assigns `seq`. */
export type NewEventRow = Omit<EventRow, 'seq'>;
export type Suppression = Selectable<SuppressionsTable>;
export type Template = Selectable<TemplatesTable>;
export type WebhookEndpoint = Selectable<WebhookEndpointsTable>;
export type WebhookEndpointUpdate = Updateable<WebhookEndpointsTable>;
export type WebhookDelivery = Selectable<WebhookDeliveriesTable>;
export type WebhookAttempt = Selectable<WebhookAttemptsTable>;
export type Subscriber = Selectable<SubscribersTable>;
export type Audience = Selectable<AudiencesTable>;
export type Campaign = Selectable<CampaignsTable>;
export type CampaignVariant = Selectable<CampaignVariantsTable>;
export type Topic = Selectable<TopicsTable>;
export type { Generated };
export type DashboardSession = Selectable<DashboardSessionsTable>;
export type ReceivingRoute = Selectable<ReceivingRoutesTable>;
export type ReceivedEmail = Selectable<ReceivedEmailsTable>;
export type ReceivedEmailContent = Selectable<ReceivedEmailContentsTable>;
export type InboxThread = Selectable<InboxThreadsTable>;
export type InboxMessage = Selectable<InboxMessagesTable>;
export type InboxLabel = Selectable<InboxLabelsTable>;
export type InboxDraft = Selectable<InboxDraftsTable>;
export type InboxDraftAttachment = Selectable<InboxDraftAttachmentsTable>;
export type InboxAgent = Selectable<InboxAgentsTable>;
export type InboxAgentRun = Selectable<InboxAgentRunsTable>;
export type Workflow = Selectable<WorkflowsTable>;
export type DeliveryDestination = Selectable<DeliveryDestinationsTable>;
export type WorkflowRun = Selectable<WorkflowRunsTable>;
export type WorkflowRunStep = Selectable<WorkflowRunStepsTable>;
export type WorkflowTrigger = Selectable<WorkflowTriggersTable>;
export type DmarcReport = Selectable<DmarcReportsTable>;
export type DmarcReportRecord = Selectable<DmarcReportRecordsTable>;
export type TlsReport = Selectable<TlsReportsTable>;
export type ReputationStateRow = Selectable<ReputationStatesTable>;
export type IpPool = Selectable<IpPoolsTable>;
export type IpPoolAddress = Selectable<IpPoolAddressesTable>;
export type IpWarmup = Selectable<IpWarmupsTable>;
export type WarmupCount = Selectable<WarmupCountsTable>;
