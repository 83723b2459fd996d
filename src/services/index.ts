import { createCredentialService, type CredentialService } from './credentials.js';
import type { ServiceDeps } from './deps.js';
import { createDomainService, type DomainService } from './domains.js';
import { limitFor, MemoryRateLimiter, type RateLimiter } from './rate-limits.js';
import { createWebhookService, type WebhookService } from './webhooks.js';
import { createWorkspaceService, type WorkspaceService } from './workspaces.js';

/** Every use case, built once by the composition root and shared by all intakes. */
export interface Services {
  workspaces: WorkspaceService;
  credentials: CredentialService;
  domains: DomainService;
  webhooks: WebhookService;
  rateLimiter: RateLimiter;
  limitFor: typeof limitFor;
}

export function createServices(deps: ServiceDeps, rateLimiter: RateLimiter = new MemoryRateLimiter()): Services {
  return {
    workspaces: createWorkspaceService(deps),
    credentials: createCredentialService(deps),
    domains: createDomainService(deps),
    webhooks: createWebhookService(deps),
    rateLimiter,
    limitFor,
  };
}

export type { ServiceDeps };
