import { isEventType, subscribesTo } from '../../events/subscriptions.js';
import { toIso } from '../../shared/clock.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { newPrefixedId } from '../../shared/ids.js';
import {
  countWebhookAttempts,
  countWebhookDeliveries,
  findWebhookDelivery,
  findWebhookDeliveryOfEvent,
  listWebhookAttempts,
  listWebhookAttemptsOfDelivery,
  listWebhookDeliveries,
  listWebhookDeliveriesOfEmail,
  requeueWebhookDelivery,
  saveWebhookDeliveries,
  type WebhookDelivery,
} from '../../store/webhooks.js';
import { listEventsByIds, saveEvents } from '../../store/events.js';
import { renderEnvelope } from '../../webhooks/render-event.js';
import type { ServiceDeps } from '../deps.js';
import { endpointFinder } from './endpoints.js';
import { attemptView, deliveryView, type AttemptView } from './webhook-views.js';
import type { WebhookService } from './webhook-service.js';

/** An endpoint's deliveries: what was sent and answered, a replay, a test event. */

type DeliveryUseCases = Omit<WebhookService, 'register' | 'list' | 'get' | 'update' | 'remove' | 'rotateSecret'>;

export function deliveryUseCases(deps: ServiceDeps): DeliveryUseCases {
  const { db, clock } = deps;
  const requireEndpoint = endpointFinder(deps);

  /** By delivery id (`msg_…`, the webhook-id header) or by the id of the event it carries (`evt_…`). */
  const requireDelivery = async (endpointId: string, deliveryId: string): Promise<WebhookDelivery> => {
    const found = deliveryId.startsWith('evt_')
      ? await findWebhookDeliveryOfEvent(db, endpointId, deliveryId)
      : await findWebhookDelivery(db, endpointId, deliveryId);
    if (!found) throw notFound(`Delivery ${deliveryId}`);
    return found;
  };

  return {
    async listDeliveries(workspaceId, id, filter, page) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const query = { endpointId: endpoint.id, status: filter.status };
      const [{ rows, more }, total] = await Promise.all([
        listWebhookDeliveries(db, query, page),
        countWebhookDeliveries(db, query),
      ]);
      // Every attempt of the page's deliveries, in one query: a failure answered before a
      // successful retry stays visible in the list.
      const attempts = new Map<string, AttemptView[]>(rows.map((r) => [r.id, []]));
      for (const a of await listWebhookAttempts(
        db,
        rows.map((r) => r.id),
      ))
        attempts.get(a.delivery_id)?.push(attemptView(a));
      return { items: rows.map((d) => ({ ...deliveryView(d), attempts: attempts.get(d.id)! })), total, more };
    },

    async getDelivery(workspaceId, id, deliveryId) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      const attempts = await listWebhookAttempts(db, [delivery.id]);
      return { ...deliveryView(delivery), attempts: attempts.map(attemptView) };
    },

    async deliveryPayload(workspaceId, id, deliveryId) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      const [event] = await listEventsByIds(db, [delivery.event_id]);
      const payload = event ? renderEnvelope(endpoint.surface, event) : null;
      return { delivery: deliveryView(delivery), payload };
    },

    async listAttempts(workspaceId, id, deliveryId, page) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      const [rows, total] = await Promise.all([
        listWebhookAttemptsOfDelivery(db, delivery.id, page),
        countWebhookAttempts(db, delivery.id),
      ]);
      return { items: rows.map(attemptView), total };
    },

    async deliveriesOfEmail(workspaceId, emailId) {
      const rows = await listWebhookDeliveriesOfEmail(db, workspaceId, emailId);
      return rows.map((r) => ({
        id: r.id,
        endpoint_id: r.endpoint_id,
        url: r.url,
        event_type: r.event_type,
        status: r.status,
        attempt_count: r.attempt_count,
        status_code: r.last_status_code,
        created_at: toIso(r.created_at),
      }));
    },

    async sendTest(workspaceId, id, type) {
      const endpoint = await requireEndpoint(workspaceId, id);
      if (endpoint.status !== 'enabled')
        throw new AppError('invalid_state', 'The webhook is disabled; enable it before sending a test event');
      if (!isEventType(type) || !subscribesTo(endpoint.events, type)) {
        throw validationError('type', `must be an event type this endpoint takes: ${endpoint.events.join(', ')}`);
      }
      const now = clock.now();
      const event = {
        id: newPrefixedId('evt_', 16),
        workspace_id: workspaceId,
        type,
        email_id: null,
        data: sampleEventData(type, now),
        created_at: now,
      };
      const delivery: WebhookDelivery = {
        id: newPrefixedId('msg_', 16),
        endpoint_id: endpoint.id,
        workspace_id: workspaceId,
        event_id: event.id,
        event_type: type,
        status: 'pending',
        attempt_count: 0,
        run_attempts: 0,
        next_attempt_at: now,
        run_started_at: now,
        lease_owner: null,
        lease_until: null,
        last_attempt_at: null,
        last_status_code: null,
        last_duration_ms: null,
        last_error: null,
        last_response: null,
        created_at: now,
        updated_at: now,
        completed_at: null,
      };
      // Not through recordEvent: that would hand the sample to every endpoint and to workflows.
      await db.transaction().execute(async (trx) => {
        await saveEvents(trx, [event]);
        await saveWebhookDeliveries(trx, [delivery]);
      });
      return deliveryView(delivery);
    },

    async replay(workspaceId, id, deliveryId) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const delivery = await requireDelivery(endpoint.id, deliveryId);
      if (endpoint.status !== 'enabled') {
        throw new AppError(
          'invalid_state',
          'The webhook is disabled; enable it (PATCH status "enabled") before replaying',
        );
      }
      const now = clock.now();
      if (!(await requeueWebhookDelivery(db, delivery.id, now))) {
        throw new AppError(
          'invalid_state',
          'This delivery is being attempted right now; try again when the attempt has finished',
        );
      }
      return deliveryView((await findWebhookDelivery(db, endpoint.id, delivery.id))!);
    },
  };
}

/**
 * Data for a test event: every field the type's payloads carry, with sample values a receiver
 * can recognise (`test: true`, addresses at Resend's test domain, a null email id).
 */
function sampleEventData(type: string, now: number): Record<string, unknown> {
  const at = toIso(now);
  return {
    test: true,
    email_id: null,
    message_id: '<test@mailsvc.invalid>',
    from: 'mailsvc <test@mailsvc.invalid>',
    to: ['delivered@resend.dev'],
    recipient: 'delivered@resend.dev',
    subject: 'Test event from the mailsvc dashboard',
    tags: [],
    metadata: { test: true },
    timestamp: at,
    subscriber_id: null,
    email: 'delivered@resend.dev',
    status: type.startsWith('workflow.') ? type.slice('workflow.'.length) : 'subscribed',
    name: 'Test',
    id: null,
    created_at: at,
  };
}
