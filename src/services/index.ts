import { createCredentialService, type CredentialService } from './credentials.js';
import type { ServiceDeps } from './deps.js';
import { createDomainService, type DomainService } from './domains.js';
import { createQueueService, type QueueService } from './queue.js';
import { createReportService, type ReportService } from './reports.js';
import { limitFor, MemoryRateLimiter, type RateLimiter } from './rate-limits.js';
import { DatabaseRateLimiter } from './db-rate-limiter.js';
import { createSuppressionService, type SuppressionService } from './suppressions.js';
import { createWebhookService, type WebhookService } from './webhooks.js';
import { createWorkspaceService, type WorkspaceService } from './workspaces.js';
import { createEmailService, type EmailService } from './emails.js';
import { createIdempotencyService, type IdempotencyService } from './idempotency.js';
import { createSendService, type SendService } from './send/send-email.js';
import type { AttachmentFetcher } from './send/attachments.js';
import { createAttachmentFetcher } from './send/fetch-attachment.js';
import { createTemplateService, type TemplateService } from './templates.js';
import { createAudienceService, type AudienceService } from './audiences.js';
import { createCampaignService, type CampaignService } from './campaigns.js';
import { createSubscriberService, type SubscriberService } from './subscribers.js';
import { createTopicService, type TopicService } from './topics.js';
import { createUnsubscribeService, type UnsubscribeService } from './unsubscribe.js';
import { createTrackingService, type TrackingService } from './tracking.js';
import { createCommitBatcher, type CommitBatcher } from '../store/commit-batcher.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import { createDashboardAuthService, type DashboardAuthService } from './dashboard-auth.js';
import { createMessageReceiver, type MessageReceiver } from './receiving/receive-message.js';
import { createReceivedEmailService, type ReceivedEmailService } from './receiving/received-emails.js';
import { createRouteService, type RouteService } from './receiving/routes.js';
import { createWorkflowService, type WorkflowService } from './workflows/workflows.js';
import { createReputationGuard, type ReputationGuard } from './deliverability/reputation-guard.js';
import { createReportInbox, type ReportInbox } from './deliverability/report-inbox.js';
import { createEmailMetricsService, type EmailMetricsService } from './deliverability/email-metrics.js';

/** Every use case, built once by the composition root and shared by all intakes. */
export interface Services {
  workspaces: WorkspaceService;
  credentials: CredentialService;
  domains: DomainService;
  templates: TemplateService;
  send: SendService;
  subscribers: SubscriberService;
  audiences: AudienceService;
  topics: TopicService;
  campaigns: CampaignService;
  unsubscribe: UnsubscribeService;
  emails: EmailService;
  idempotency: IdempotencyService;
  suppressions: SuppressionService;
  queue: QueueService;
  webhooks: WebhookService;
  tracking: TrackingService;
  reports: ReportService;
  /** DMARC aggregate and TLS reports about our domains, received by the inbound listener. */
  reportInbox: ReportInbox;
  /** Receiving: which addresses take mail, taking it, and reading what was taken. */
  routes: RouteService;
  receiving: MessageReceiver;
  receivedEmails: ReceivedEmailService;
  /** Workflows: definitions, runs, custom events (the runner in src/workflows/ executes them). */
  workflows: WorkflowService;
  dashboardAuth: DashboardAuthService;
  /** Hourly counts of what happened to mail: the overview's charts and GET /v1/emails/metrics. */
  emailMetrics: EmailMetricsService;
  /** Per sending domain bounce and complaint rates; holds marketing mail of paused domains. */
  reputation: ReputationGuard;
  rateLimiter: RateLimiter;
  limitFor: typeof limitFor;
  /** The process's group commit: intakes and the delivery workers share its transactions. */
  batcher: CommitBatcher;
  /** Resolves once every committed write is on disk: await it before answering a write. */
  durable: () => Promise<void>;
  /** The server's metrics (a no-op in the CLI), for the intakes to count with. */
  metrics: Metrics;
}

export interface ServiceOptions {
  rateLimiter?: RateLimiter;
  fetchAttachment?: AttachmentFetcher | null;
  /** Told when mail was queued, so delivery can start at once. */
  onQueued?: (() => void) | undefined;
  /** Told when an event was queued for workflows, so the runner can act at once. */
  onTrigger?: (() => void) | undefined;
}

export function createServices(deps: ServiceDeps, options: ServiceOptions = {}): Services {
  // Nodes sharing PostgreSQL must count against the same windows; one SQLite node counts in memory.
  const rateLimiter = options.rateLimiter ?? (deps.dialect === 'postgres' ? new DatabaseRateLimiter(deps.db) : new MemoryRateLimiter());
  const templates = createTemplateService(deps);
  const tracking = createTrackingService(deps);
  // One batcher for the process: concurrent intakes share its commits.
  const batcher = createCommitBatcher(deps.db, deps.dialect, deps.config.databasePoolSize, deps.durable);
  const subscribers = createSubscriberService(deps);
  const unsubscribe = createUnsubscribeService({ ...deps, subscribers });
  const send = createSendService({ ...deps, templates, tracking, rateLimiter, batcher, fetchAttachment: options.fetchAttachment === undefined ? createAttachmentFetcher(deps.config, deps.resolver) : options.fetchAttachment, unsubscribeLink: unsubscribe.link, onQueued: options.onQueued });
  const topics = createTopicService(deps);
  const campaigns = createCampaignService({ ...deps, send, templates, topics, unsubscribe, tracking });
  const audiences = createAudienceService({ ...deps, subscribers });
  return {
    workspaces: createWorkspaceService(deps),
    credentials: createCredentialService(deps),
    domains: createDomainService(deps),
    templates,
    send,
    subscribers,
    audiences,
    topics,
    campaigns,
    unsubscribe,
    emails: createEmailService({ ...deps, contentFor: campaigns.contentFor }),
    idempotency: createIdempotencyService(deps),
    suppressions: createSuppressionService(deps),
    queue: createQueueService(deps),
    webhooks: createWebhookService(deps),
    tracking,
    reports: createReportService(deps),
    reportInbox: createReportInbox(deps),
    routes: createRouteService(deps),
    receiving: createMessageReceiver({ ...deps, batcher }),
    receivedEmails: createReceivedEmailService(deps),
    workflows: createWorkflowService({ ...deps, templates, audiences, send, onTrigger: options.onTrigger }),
    dashboardAuth: createDashboardAuthService(deps),
    reputation: createReputationGuard(deps),
    emailMetrics: createEmailMetricsService(deps),
    rateLimiter,
    limitFor,
    batcher,
    durable: deps.durable,
    metrics: deps.metrics ?? noMetrics,
  };
}

export type { ServiceDeps };
