import type { WorkspacesTable } from './workspaces.js';
import type { CredentialsTable } from './credentials.js';
import type { DomainsTable, DkimKeysTable, DomainClaimsTable } from './domains.js';
import type { EmailsTable, EmailContentsTable, QueueItemsTable, DeliveryAttemptsTable } from './emails.js';
import type { EventsTable } from './events.js';
import type {
  SubscribersTable,
  SubscriberTagsTable,
  TopicsTable,
  SubscriberTopicsTable,
  AudiencesTable,
  AudienceMembersTable,
  ContactPropertiesTable,
  ContactImportsTable,
  ContactImportFilesTable,
} from './subscribers.js';
import type {
  WorkflowsTable,
  WorkflowVersionsTable,
  WorkflowRunsTable,
  WorkflowRunStepsTable,
  WorkflowTriggersTable,
  EventDefinitionsTable,
} from './workflows.js';
import type { AuditLogTable } from './audit.js';
import type {
  UserInvitesTable,
  UserRecoveryCodesTable,
  UsersTable,
  UserTwoFactorTable,
  WorkspaceMembersTable,
  WorkspaceTwoFactorTable,
} from './users.js';
import type { ApiLogsTable, IdempotencyKeysTable, RateLimitWindowsTable } from './requests.js';
import type { TemplatesTable, TemplateVersionsTable } from './templates.js';
import type { SuppressionsTable } from './suppressions.js';
import type { WebhookEndpointsTable, WebhookDeliveriesTable, WebhookAttemptsTable } from './webhooks.js';
import type { CampaignsTable, CampaignVariantsTable, CampaignHoldoutsTable } from './campaigns.js';
import type { DashboardSessionsTable, DashboardLoginTokensTable } from './dashboard.js';
import type { ReceivingRoutesTable, ReceivedEmailsTable, ReceivedEmailContentsTable } from './receiving.js';
import type {
  InboxThreadsTable,
  InboxMessagesTable,
  InboxLabelsTable,
  InboxThreadLabelsTable,
  InboxDraftsTable,
  InboxDraftAttachmentsTable,
  InboxAgentRunsTable,
  InboxAgentsTable,
} from './inboxes.js';
import type {
  DmarcReportsTable,
  DmarcReportRecordsTable,
  TlsReportsTable,
  ReputationStatesTable,
  StatsHourlyTable,
} from './deliverability.js';
import type {
  IpPoolsTable,
  IpPoolAddressesTable,
  IpWarmupsTable,
  WarmupCountsTable,
  DeliveryDestinationsTable,
} from './delivery.js';
import type { InstanceTable } from './instance.js';
import type { OAuthGrantsTable, OAuthModelsTable } from './oauth.js';

/**
 * The kysely schema: every table, one module per aggregate beside this one. Portable column
 * types only, so one schema serves SQLite and PostgreSQL: timestamps are epoch milliseconds
 * (bigint), JSON is text, booleans are 0/1 integers. Rows stay inside `store/`: each
 * repository turns them into entities and back (row-codec.ts).
 */
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
  audit_log: AuditLogTable;
  users: UsersTable;
  workspace_members: WorkspaceMembersTable;
  user_invites: UserInvitesTable;
  user_two_factor: UserTwoFactorTable;
  user_recovery_codes: UserRecoveryCodesTable;
  workspace_two_factor: WorkspaceTwoFactorTable;
  oauth_models: OAuthModelsTable;
  oauth_grants: OAuthGrantsTable;
  event_definitions: EventDefinitionsTable;
  contact_properties: ContactPropertiesTable;
  contact_imports: ContactImportsTable;
  contact_import_files: ContactImportFilesTable;
  domain_claims: DomainClaimsTable;
  idempotency_keys: IdempotencyKeysTable;
  templates: TemplatesTable;
  template_versions: TemplateVersionsTable;
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
