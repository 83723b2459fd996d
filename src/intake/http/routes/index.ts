import type { Route } from '../route.js';
import { legacyDomainRoutes } from './legacy/domains.js';
import { legacyWebhookRoutes } from './legacy/webhooks.js';
import { v1ApiKeyRoutes } from './v1/api-keys.js';
import { v1DomainRoutes } from './v1/domains.js';
import { v1WebhookRoutes } from './v1/webhooks.js';

/** Every authenticated API route of both surfaces. */
export const apiRoutes: Route[] = [...v1DomainRoutes, ...v1ApiKeyRoutes, ...v1WebhookRoutes, ...legacyDomainRoutes, ...legacyWebhookRoutes];
