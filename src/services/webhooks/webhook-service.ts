import type { WebhookDeliveryStatus, WebhookEndpointStatus, WebhookSurface } from '../../store/webhooks.js';
import type { ListPage, Listed } from '../../store/infra/list-page.js';
import type { Envelope } from '../../webhooks/render-event.js';
import type { AttemptView, DeliveryView, DeliveryWithAttempts, WebhookView } from './webhook-views.js';

/** What every surface may ask of webhooks: endpoints (endpoints.ts) and their deliveries (deliveries.ts). */

export interface RegisterWebhookInput {
  url: string;
  events: string[];
  /** Legacy only: the caller's own secret. Versioned endpoints get a generated one. */
  secret?: string | undefined;
  description?: string | null | undefined;
}

export interface UpdateWebhookInput {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  status?: WebhookEndpointStatus | undefined;
}

export interface WebhookWithSecret {
  webhook: WebhookView;
  /** The full secret: returned by the calls that set it, never again. */
  secret: string;
}

export interface WebhookService {
  register(workspaceId: string, surface: WebhookSurface, input: RegisterWebhookInput): Promise<WebhookWithSecret>;
  list(workspaceId: string, page: ListPage): Promise<Listed<WebhookView>>;
  get(workspaceId: string, id: string): Promise<WebhookView>;
  update(workspaceId: string, id: string, input: UpdateWebhookInput): Promise<WebhookView>;
  remove(workspaceId: string, id: string): Promise<void>;
  rotateSecret(workspaceId: string, id: string): Promise<WebhookWithSecret>;
  listDeliveries(
    workspaceId: string,
    id: string,
    filter: { status?: WebhookDeliveryStatus | undefined },
    page: ListPage,
  ): Promise<Listed<DeliveryWithAttempts>>;
  getDelivery(workspaceId: string, id: string, deliveryId: string): Promise<DeliveryWithAttempts>;
  /** One delivery's attempts, oldest first. */
  listAttempts(
    workspaceId: string,
    id: string,
    deliveryId: string,
    page: { limit: number; offset: number },
  ): Promise<{ items: AttemptView[]; total: number }>;
  replay(workspaceId: string, id: string, deliveryId: string): Promise<DeliveryView>;
  /** A delivery with the body it carries (null once the event is past retention). */
  deliveryPayload(
    workspaceId: string,
    id: string,
    deliveryId: string,
  ): Promise<{ delivery: DeliveryView; payload: Envelope | null }>;
  /** Every delivery of an email's events, to any endpoint. */
  deliveriesOfEmail(
    workspaceId: string,
    emailId: string,
  ): Promise<
    Array<{
      id: string;
      endpoint_id: string;
      url: string;
      event_type: string;
      status: WebhookDeliveryStatus;
      attempt_count: number;
      status_code: number | null;
      created_at: string;
    }>
  >;
  /**
   * Sends a test event of `type` (one the endpoint takes) to this endpoint only: sample data
   * (no email id, Resend's test address), recorded and retried like any delivery, seen by no
   * other endpoint and no workflow.
   */
  sendTest(workspaceId: string, id: string, type: string): Promise<DeliveryView>;
}

/** The event types an endpoint takes, `*` spelled out. */
