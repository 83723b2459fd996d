import type { AuditService } from './audit.js';
import type { UserService } from './users.js';
import type { TwoFactorService } from './two-factor.js';
import type { CredentialService } from './credentials.js';
import type { OAuthService } from './oauth.js';
import type { ServiceDeps } from './deps.js';
import type { Enqueue } from './send/enqueue.js';
import type { DomainService } from './domains/domains.js';
import type { QueueService } from './queue.js';
import type { limitFor } from './rate-limits.js';
import type { RateLimiter } from '../shared/fixed-window.js';
import type { SuppressionService } from './suppressions.js';
import type { IpPoolService } from './ip-pools.js';
import type { WebhookService } from './webhooks/webhooks.js';
import type { WorkspaceService } from './workspaces.js';
import type { EmailService } from './emails.js';
import type { IdempotencyService } from './idempotency.js';
import type { SendService } from './send/send-email.js';
import type { TemplateService } from './templates.js';
import type { AudienceService } from './marketing/audiences.js';
import type { CampaignService } from './marketing/campaigns.js';
import type { SubscriberService } from './marketing/subscribers.js';
import type { ContactImportService } from './marketing/contact-imports/contact-imports.js';
import type { TopicService } from './marketing/topics.js';
import type { UnsubscribeService } from './marketing/unsubscribe.js';
import type { PreferenceService } from './marketing/preferences.js';
import type { TrackingService } from './tracking.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import type { Metrics } from '../observability/metrics.js';
import type { FreeSpace } from '../store/infra/free-space.js';
import type { ByteBudget } from '../shared/byte-budget.js';
import type { DashboardAuthService } from './dashboard-auth.js';
import type { ReceivedEmailService } from './receiving/received-emails.js';
import type { RouteService } from './receiving/routes.js';
import type { InboxThreadService } from './inboxes/inbox-threads.js';
import type { InboxReplyService } from './inboxes/inbox-replies.js';
import type { InboxDraftService } from './inboxes/inbox-drafts.js';
import type { InboxAgentService } from './inboxes/agent-settings.js';
import type { WorkflowService } from './workflows/workflows.js';
import type { ReputationGuard } from './deliverability/reputation-guard.js';
import type { ReportSummaries } from './deliverability/report-summaries.js';
import type { EmailMetricsService } from './deliverability/email-metrics.js';
import type { CampaignEngagementService } from './marketing/campaign-engagement.js';
import type { UsageService } from './usage.js';
import type { ApiLogService } from './api-logs.js';
import type { EventDefinitionService } from './workflows/event-definitions.js';
import type { ContactPropertyService } from './marketing/contact-properties.js';
import type { DomainClaimService } from './domains/domain-claims.js';

/** Every use case, built once by the composition root (src/runtime.ts) and shared by all intakes. */
export interface Services {
  workspaces: WorkspaceService;
  /** Who did what (audit-trail.ts records the audited use cases). */
  audit: AuditService;
  /** Dashboard users and their roles per workspace. */
  users: UserService;
  /** TOTP second factor and recovery codes of dashboard users; workspaces that require it. */
  twoFactor: TwoFactorService;
  credentials: CredentialService;
  /** The OAuth authorization server's storage, grants and admin-created clients (oidc-provider runs the protocol). */
  oauth: OAuthService;
  domains: DomainService;
  templates: TemplateService;
  send: SendService;
  subscribers: SubscriberService;
  audiences: AudienceService;
  topics: TopicService;
  campaigns: CampaignService;
  /** A broadcast's recipients by event and the links they clicked. */
  campaignEngagement: CampaignEngagementService;
  /** What a workspace used against its limits (Resend's usage.get). */
  usage: UsageService;
  /** Every authenticated API request, redacted (Resend's logs). */
  apiLogs: ApiLogService;
  /** Declared custom events and their payload schemas (Resend's events.create …). */
  eventDefinitions: EventDefinitionService;
  /** Typed custom fields of contacts with fallbacks (Resend's contactProperties). */
  contactProperties: ContactPropertyService;
  /** CSV imports of contacts, streamed in batches (Resend's contacts.imports, `mailsvc contacts import`). */
  contactImports: ContactImportService;
  /** Taking over a domain other workspaces hold, proved by a TXT record (Resend's domains.claims). */
  domainClaims: DomainClaimService;
  unsubscribe: UnsubscribeService;
  /** The preference centre behind every unsubscribe link. */
  preferences: PreferenceService;
  emails: EmailService;
  idempotency: IdempotencyService;
  suppressions: SuppressionService;
  /** IP pools: the source addresses mail leaves from (instance-wide, the operator's). */
  ipPools: IpPoolService;
  queue: QueueService;
  webhooks: WebhookService;
  tracking: TrackingService;
  /** DMARC aggregate and TLS reports about a workspace's domains, per day (received by receiving/). */
  reportSummaries: ReportSummaries;
  /** Receiving: which addresses take mail, and reading what was taken (the taking is receiving/'s). */
  routes: RouteService;
  receivedEmails: ReceivedEmailService;
  /** Inboxes as mail clients see them: threads, labels (over the routes for one address). */
  inboxThreads: InboxThreadService;
  /** Replies and forwards from an inbox, through the send service. */
  inboxReplies: InboxReplyService;
  /** Drafts of an inbox, standalone or replies, sent through the same path. */
  inboxDrafts: InboxDraftService;
  /** The settings of an inbox's agent. */
  inboxAgent: InboxAgentService;
  /** Workflows: definitions, runs, custom events (the runner in src/workflows/ executes them). */
  workflows: WorkflowService;
  dashboardAuth: DashboardAuthService;
  /** Hourly counts of what happened to mail: the overview's charts and GET /v1/emails/metrics. */
  emailMetrics: EmailMetricsService;
  /** Per sending domain bounce and complaint rates; holds marketing mail of paused domains. */
  reputation: ReputationGuard;
  /** The one door into the queue (send, SMTP, workflows and campaign pages pass through it). */
  enqueue: Enqueue;
  rateLimiter: RateLimiter;
  limitFor: typeof limitFor;
  /** The process's group commit: intakes and the delivery workers share its transactions. */
  batcher: CommitBatcher;
  /** Resolves once every committed write is on disk: await it before answering a write. */
  durable: () => Promise<void>;
  /** The disk's reserve: intakes refuse new mail below it (storage_full), before reading a message. */
  space: FreeSpace;
  /** Bytes of large messages being taken in at once, by any intake (`http.bodyMemory`): the rest wait their turn. */
  intakeMemory: ByteBudget;
  /** The server's metrics (a no-op in the CLI), for the intakes to count with. */
  metrics: Metrics;
}

export type { ServiceDeps };
