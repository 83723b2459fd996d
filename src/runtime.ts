import { createUserService } from './services/users.js';
import { createTwoFactorService } from './services/two-factor.js';
import { createAuditService } from './services/audit.js';
import { withAuditTrail } from './services/audit-trail.js';
import { availableParallelism } from 'node:os';
import { checkSecretKey } from './store/check-secret-key.js';
import type { Config } from './config/schema.js';
import { loadSecretKey } from './config/secret-key.js';
import { SIGN_TASK } from './delivery/dkim-signer.js';
import type { PolicyFetcher } from './delivery/mta-sts.js';
import type { ServerMetrics } from './observability/metrics.js';
import type { ServiceDeps } from './services/deps.js';
import type { Services } from './services/index.js';
import { COMPOSE_TASK, poolComposer } from './messages/compose.js';
import { campaignMessages } from './messages/campaign-message.js';
import { messageLinks } from './messages/links.js';
import { noMetrics } from './observability/metrics.js';
import { createAudienceService } from './services/marketing/audiences.js';
import { createCampaignService } from './services/marketing/campaigns.js';
import { createCredentialService } from './services/credentials.js';
import { createOAuthService } from './services/oauth.js';
import { createDashboardAuthService } from './services/dashboard-auth.js';
import { DatabaseRateLimiter } from './store/rate-limits.js';
import { createEmailMetricsService } from './services/deliverability/email-metrics.js';
import { createReportSummaries } from './services/deliverability/report-summaries.js';
import { createReputationGuard } from './services/deliverability/reputation-guard.js';
import { createDomainService } from './services/domains/domains.js';
import { createEmailService } from './services/emails.js';
import { createIdempotencyService } from './services/idempotency.js';
import { createQueueService } from './services/queue.js';
import { limitFor } from './services/rate-limits.js';
import { MemoryRateLimiter } from './shared/fixed-window.js';
import { createCampaignEngagementService } from './services/marketing/campaign-engagement.js';
import { createUsageService } from './services/usage.js';
import { createApiLogService } from './services/api-logs.js';
import { createEventDefinitionService } from './services/workflows/event-definitions.js';
import { createContactPropertyService } from './services/marketing/contact-properties.js';
import { createContactImportService } from './services/marketing/contact-imports/contact-imports.js';
import { createDomainClaimService } from './services/domains/domain-claims.js';
import { createReceivedEmailService } from './services/receiving/received-emails.js';
import { createRouteService } from './services/receiving/routes.js';
import { createEnqueue } from './services/send/enqueue.js';
import { createAttachmentFetcher } from './messages/fetch-attachment.js';
import { createSendService } from './services/send/send-email.js';
import { createInboxThreadService } from './services/inboxes/inbox-threads.js';
import { createInboxReplyService } from './services/inboxes/inbox-replies.js';
import { createInboxDraftService } from './services/inboxes/inbox-drafts.js';
import { createInboxAgentService } from './services/inboxes/agent-settings.js';
import { createSubscriberService } from './services/marketing/subscribers.js';
import { createSuppressionService } from './services/suppressions.js';
import { createIpPoolService } from './services/ip-pools.js';
import { createTemplateService } from './services/templates.js';
import { createTopicService } from './services/marketing/topics.js';
import { createTrackingService } from './services/tracking.js';
import { loadEngagementRules, type EngagementRules } from './engagement/engagement-rules.js';
import { createUnsubscribeService } from './services/marketing/unsubscribe.js';
import { createPreferenceService } from './services/marketing/preferences.js';
import { createWebhookService } from './services/webhooks/webhooks.js';
import { createWorkflowService } from './services/workflows/workflows.js';
import { createWorkspaceService } from './services/workspaces.js';
import { createCommitBatcher } from './store/infra/commit-batcher.js';
import type { Email } from './store/emails.js';
import { systemClock, type Clock } from './shared/clock.js';
import { steadyClock } from './shared/steady-clock.js';
import { createResolver, type DnsResolver } from './shared/dns.js';
import type { Logger } from './shared/logger.js';
import { createWorkerPool, type WorkerPool } from './shared/worker-pool.js';
import { migrateToLatest, openStore, sqliteFile, storeOptions, type Store } from './store/infra/db.js';
import { watchFreeSpace } from './store/infra/free-space.js';
import { byteBudget, LARGE_MESSAGE } from './shared/byte-budget.js';
import { dirname } from 'node:path';

/**
 * The composition root's first half, shared by the CLI and the server: the one place that
 * opens the store and builds the services from the configuration. Nothing else constructs
 * collaborators; every module receives its database, clock, resolver, logger and config.
 */

export interface Runtime {
  config: Config;
  store: Store;
  services: Services;
  deps: ServiceDeps;
  /** The message of a queued email: stored, or a campaign's composed now (messages/campaign-message.ts). */
  content(email: Email): Promise<Buffer | undefined>;
  /** Threads for CPU-bound work (DKIM signing, MIME composition), spawned on first use. */
  workers: WorkerPool;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger: Logger;
  clock?: Clock;
  resolver?: DnsResolver;
  /** How MTA-STS policies are fetched (HTTPS on port 443 by default); tests replace it. */
  mtaStsFetcher?: PolicyFetcher;
  /** The server's metrics; the CLI has none. */
  metrics?: ServerMetrics | undefined;
}

/**
 * Opens the database, applies pending migrations, refuses a secret key that cannot open the
 * database's secrets (one line naming `secretKey`), and builds the services.
 */
export async function openRuntime(config: Config, options: RuntimeOptions): Promise<Runtime> {
  const store = openStore(config.database, storeOptions(config, options.logger));
  const d = config.delivery;
  const workers = createWorkerPool({
    threads: d.signingThreads === 'auto' ? Math.max(1, availableParallelism() - 1) : d.signingThreads,
    tasks: { sign: SIGN_TASK, compose: COMPOSE_TASK },
    size: d.signingThreadMemory,
  });
  const close = async () => {
    await workers.close();
    await store.close();
  };
  try {
    const { error, applied } = await migrateToLatest(store);
    if (error) throw error instanceof Error ? error : new Error(String(error));
    if (applied.length > 0) options.logger.info({ applied, database: store.location }, 'migrations applied');
    const clock = options.clock ?? systemClock;
    const secretKey = loadSecretKey(config);
    await checkSecretKey(store.db, secretKey, clock.now());
    const deps: ServiceDeps = {
      db: store.db,
      dialect: store.dialect,
      durable: () => store.durable(),
      space: watchFreeSpace(storagePaths(config), config.storage.minFreeBytes),
      rows: store.rows,
      compose: poolComposer(workers),
      config,
      clock,
      logger: options.logger,
      resolver: options.resolver ?? createResolver(config.delivery.dnsServers),
      secretKey,
      links: messageLinks(secretKey, config.http.publicUrl),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.mtaStsFetcher ? { mtaStsFetcher: options.mtaStsFetcher } : {}),
    };
    const content = campaignMessages(deps);
    const t = config.tracking;
    const rules = loadEngagementRules(t.engagementRules, {
      clickAfterDeliveryMs: t.scannerClickSeconds * 1000,
      burstMs: t.linkBurstMs,
    });
    const services = buildServices(deps, content, rules);
    await services.workspaces.ensureDefault();
    return { config, store, services, deps, content, workers, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Where the server writes: the SQLite database's directory and `dataDir` (spooled imports, keys). */
const storagePaths = (config: Config): string[] => {
  const file = sqliteFile(config.database);
  return file ? [dirname(file), config.dataDir] : [config.dataDir];
};

/** Every use case, built once and shared by all intakes. */
function buildServices(deps: ServiceDeps, content: Runtime['content'], rules: EngagementRules): Services {
  // Nodes sharing PostgreSQL must count against the same windows; one SQLite node counts in memory.
  const rateLimiter =
    deps.dialect === 'postgres'
      ? new DatabaseRateLimiter(deps.db)
      : new MemoryRateLimiter(deps.clock === systemClock ? steadyClock().now : undefined);
  // One batcher for the process: concurrent intakes share its commits.
  const batcher = createCommitBatcher(deps.db, deps.dialect, deps.config.databasePoolSize, deps.durable);
  const enqueue = createEnqueue({ clock: deps.clock, rateLimiter, batcher, space: deps.space, metrics: deps.metrics });
  const templates = createTemplateService(deps);
  const subscribers = createSubscriberService(deps);
  const fetchAttachment = createAttachmentFetcher(deps.config, deps.resolver);
  const send = createSendService({ ...deps, templates, enqueue, fetchAttachment });
  const topics = createTopicService(deps);
  const audiences = createAudienceService({ ...deps, subscribers });
  const routes = createRouteService(deps);
  const inboxThreads = createInboxThreadService({ ...deps, routes });
  const inboxReplies = createInboxReplyService({ ...deps, send, inboxThreads });
  const inboxDrafts = createInboxDraftService({ ...deps, send, inboxThreads, inboxReplies, fetchAttachment });
  const domains = createDomainService(deps);
  const audit = createAuditService(deps);
  const users = createUserService({ ...deps, send });
  const twoFactor = createTwoFactorService(deps);
  const services: Services = {
    audit,
    users,
    twoFactor,
    workspaces: createWorkspaceService(deps),
    credentials: createCredentialService(deps),
    oauth: createOAuthService(deps),
    domains,
    templates,
    send,
    subscribers,
    audiences,
    topics,
    campaigns: createCampaignService({ ...deps, send, templates, topics }),
    campaignEngagement: createCampaignEngagementService(deps),
    usage: createUsageService(deps),
    apiLogs: createApiLogService({ ...deps, batcher }),
    eventDefinitions: createEventDefinitionService(deps),
    contactProperties: createContactPropertyService(deps),
    contactImports: createContactImportService({ ...deps, subscribers, audiences, topics }),
    domainClaims: createDomainClaimService({ ...deps, domains }),
    unsubscribe: createUnsubscribeService({ ...deps, subscribers }),
    preferences: createPreferenceService({ ...deps, subscribers, topics }),
    emails: createEmailService({ ...deps, contentFor: content }),
    idempotency: createIdempotencyService(deps),
    suppressions: createSuppressionService(deps),
    ipPools: createIpPoolService(deps),
    queue: createQueueService(deps),
    webhooks: createWebhookService(deps),
    tracking: createTrackingService({ ...deps, rules }),
    reportSummaries: createReportSummaries(deps),
    routes,
    inboxThreads,
    inboxReplies,
    inboxDrafts,
    inboxAgent: createInboxAgentService({ ...deps, inboxThreads }),
    receivedEmails: createReceivedEmailService(deps),
    workflows: createWorkflowService({ ...deps, templates, audiences, send }),
    dashboardAuth: createDashboardAuthService({ ...deps, users, twoFactor }),
    reputation: createReputationGuard(deps),
    emailMetrics: createEmailMetricsService(deps),
    enqueue,
    rateLimiter,
    limitFor,
    batcher,
    durable: deps.durable,
    space: deps.space,
    intakeMemory: byteBudget(deps.config.http.bodyMemory, LARGE_MESSAGE),
    metrics: deps.metrics ?? noMetrics,
  };
  // Every surface calls the audited use cases through this one wrapping (services/audit-trail.ts).
  return withAuditTrail(services, audit, deps);
}
