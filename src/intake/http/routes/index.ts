import type { Route } from '../route.js';
import { legacyDomainRoutes } from './legacy/domains.js';
import { v1ApiKeyRoutes } from './v1/api-keys.js';
import { v1DomainRoutes } from './v1/domains.js';
import { v1SuppressionRoutes } from './v1/suppressions.js';

/** Every authenticated API route of both surfaces. */
export const apiRoutes: Route[] = [...v1DomainRoutes, ...v1ApiKeyRoutes, ...v1SuppressionRoutes, ...legacyDomainRoutes];
