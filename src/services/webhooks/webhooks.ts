import { EVENT_TYPES } from '../../events/event-types.js';
import { ALL_EVENTS } from '../../events/subscriptions.js';
import type { ServiceDeps } from '../deps.js';
import { deliveryUseCases } from './deliveries.js';
import { endpointUseCases } from './endpoints.js';
import type { WebhookService } from './webhook-service.js';

export type { AttemptView, DeliveryView, WebhookView } from './webhook-views.js';
export type { RegisterWebhookInput, UpdateWebhookInput, WebhookService, WebhookWithSecret } from './webhook-service.js';
export { parseEvents } from './endpoints.js';

export const subscribedTypes = (events: readonly string[]): string[] =>
  events.includes(ALL_EVENTS) ? [...EVENT_TYPES] : [...events];

/** Webhooks: the endpoints (endpoints.ts) and what was delivered to them (deliveries.ts). */
export const createWebhookService = (deps: ServiceDeps): WebhookService => ({
  ...endpointUseCases(deps),
  ...deliveryUseCases(deps),
});
