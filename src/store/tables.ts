/**
 * Transitional: the row types as they were, while the aggregates move to entities of their
 * repositories. Nothing new imports it.
 */
import type { Generated, Selectable } from 'kysely';
import type { DashboardSessionsTable } from './tables/dashboard.js';
import type { IpPoolsTable, IpPoolAddressesTable, DeliveryDestinationsTable } from './tables/delivery.js';

export * from './tables/workspaces.js';
export * from './tables/credentials.js';
export * from './tables/domains.js';
export * from './tables/emails.js';
export * from './tables/events.js';
export * from './tables/subscribers.js';
export * from './tables/workflows.js';
export * from './tables/requests.js';
export * from './tables/templates.js';
export * from './tables/suppressions.js';
export * from './tables/webhooks.js';
export * from './tables/campaigns.js';
export * from './tables/dashboard.js';
export * from './tables/receiving.js';
export * from './tables/inboxes.js';
export * from './tables/deliverability.js';
export * from './tables/delivery.js';
export * from './tables/instance.js';
export type { Database } from './tables/database.js';

export type { Generated };
export type DashboardSession = Selectable<DashboardSessionsTable>;
export type DeliveryDestination = Selectable<DeliveryDestinationsTable>;
export type IpPool = Selectable<IpPoolsTable>;
export type IpPoolAddress = Selectable<IpPoolAddressesTable>;
