import { z } from 'zod';
import type { AttemptView, DeliveryView, WebhookView } from '../../../../services/webhooks/webhooks.js';
import { validationError } from '../../../../shared/errors.js';
import { WEBHOOK_DELIVERY_STATUSES } from '../../../../store/webhooks.js';
import { cursorList, offsetList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute, type HandlerInput } from '../../route.js';

/** `url` (SPEC) or `endpoint` (Resend) name the receiving URL. */
const endpointFields = {
  url: z.string().min(1).optional(),
  endpoint: z.string().min(1).optional(),
  events: z.array(z.string()).optional(),
  description: z.string().nullable().optional(),
};
const createBody = z.object(endpointFields);
const updateBody = z.object({ ...endpointFields, status: z.enum(['enabled', 'disabled']).optional() });

const urlOf = (body: { url?: string | undefined; endpoint?: string | undefined }): string | undefined => {
  if (body.url !== undefined && body.endpoint !== undefined && body.url !== body.endpoint)
    throw validationError('endpoint', 'give url or endpoint, not both');
  return body.url ?? body.endpoint;
};

/** The endpoint with Resend's names beside ours. */
const render = (w: WebhookView) => ({ object: 'webhook' as const, ...w, endpoint: w.url, signing_secret: w.secret });

const deliveriesQuery = z.looseObject({ status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional() });

/** A delivery as Resend lists the events sent to an endpoint. */
const eventLog = (d: DeliveryView) => ({
  id: d.id,
  event_id: d.event_id,
  type: d.event_type,
  created_at: d.created_at,
  status:
    d.status === 'succeeded'
      ? 'success'
      : d.status === 'failed'
        ? 'failed'
        : d.attempt_count > 0
          ? 'attempting'
          : 'pending',
});

const attemptLog = (a: AttemptView) => ({
  id: a.id,
  http_status_code: a.status_code,
  response: a.response ?? a.error ?? '',
  sent_at: a.started_at,
});

const rotate = async ({ deps, workspace, params }: HandlerInput<unknown, unknown>) => {
  const { webhook, secret } = await deps.services.webhooks.rotateSecret(workspace.id, params.id!);
  return { ...render(webhook), secret, signing_secret: secret };
};

export const v1WebhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks',
    summary: 'Register an endpoint (`url`, or `endpoint`); the answer carries its signing secret, in full, this once',
    operation: 'api',
    scope: 'webhooks:write',
    body: createBody,
    status: 201,
    handler: async ({ deps, workspace, body }) => {
      const url = urlOf(body);
      if (url === undefined) throw validationError('url', 'is required');
      const { webhook, secret } = await deps.services.webhooks.register(workspace.id, 'v1', {
        url,
        events: body.events ?? [],
        description: body.description,
      });
      return { ...render(webhook), secret, signing_secret: secret };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks',
    summary: 'List endpoints (secrets masked)',
    operation: 'api',
    scope: 'webhooks:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const { items, total, more } = await deps.services.webhooks.list(workspace.id, page);
      return offsetList('webhooks', items.map(render), total, page, more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id',
    summary: 'Read one endpoint (secret masked)',
    operation: 'api',
    scope: 'webhooks:read',
    handler: async ({ deps, workspace, params }) => render(await deps.services.webhooks.get(workspace.id, params.id!)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/webhooks/:id',
    summary: 'Change the URL (or endpoint), events or description, or disable and re-enable the endpoint',
    operation: 'api',
    scope: 'webhooks:write',
    body: updateBody,
    handler: async ({ deps, workspace, params, body }) =>
      render(
        await deps.services.webhooks.update(workspace.id, params.id!, {
          url: urlOf(body),
          events: body.events,
          description: body.description,
          status: body.status,
        }),
      ),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/webhooks/:id',
    summary: 'Remove an endpoint with its deliveries',
    operation: 'api',
    scope: 'webhooks:write',
    handler: async ({ deps, workspace, params }) => {
      await deps.services.webhooks.remove(workspace.id, params.id!);
      return { object: 'webhook', id: params.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/rotate-secret',
    summary: 'Replace the signing secret; the previous one keeps signing for 24 hours',
    operation: 'api',
    scope: 'webhooks:write',
    handler: rotate,
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/signing-secret/rotate',
    summary: 'The same as rotate-secret, at the path of the Resend API',
    operation: 'api',
    scope: 'webhooks:write',
    handler: rotate,
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries',
    summary: 'List deliveries, newest first, each with every attempt made (oldest first) and the next attempt',
    operation: 'api',
    scope: 'webhooks:read',
    paginated: true,
    query: deliveriesQuery,
    handler: async ({ deps, workspace, params, query }) => {
      const page = parsePage(query);
      const { items, total, more } = await deps.services.webhooks.listDeliveries(
        workspace.id,
        params.id!,
        { status: query.status },
        page,
      );
      return offsetList('deliveries', items, total, page, more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries/:delivery_id',
    summary: 'Read one delivery with every attempt',
    operation: 'api',
    scope: 'webhooks:read',
    handler: ({ deps, workspace, params }) =>
      deps.services.webhooks.getDelivery(workspace.id, params.id!, params.delivery_id!),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries/:delivery_id/attempts',
    summary: "A delivery's attempts, oldest first: time, status code, response excerpt, duration, network error",
    operation: 'api',
    scope: 'webhooks:read',
    paginated: true,
    handler: async ({ deps, workspace, params, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const { items, total } = await deps.services.webhooks.listAttempts(
        workspace.id,
        params.id!,
        params.delivery_id!,
        page,
      );
      return offsetList('attempts', items, total, page, page.offset + items.length < total);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/deliveries/:delivery_id/replay',
    summary: 'Send a delivery again now, with a fresh retry schedule',
    operation: 'api',
    scope: 'webhooks:write',
    status: 202,
    handler: ({ deps, workspace, params }) =>
      deps.services.webhooks.replay(workspace.id, params.id!, params.delivery_id!),
  }),
  // The same deliveries as Resend shows them: the events sent to an endpoint.
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id/events',
    summary: 'The events sent to an endpoint, newest first (Resend shape: its deliveries; cursor pagination)',
    operation: 'api',
    scope: 'webhooks:read',
    handler: async ({ deps, workspace, params, query }) => {
      const { items, more } = await deps.services.webhooks.listDeliveries(
        workspace.id,
        params.id!,
        {},
        parsePage(query as Record<string, unknown>),
      );
      return cursorList(items.map(eventLog), more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id/events/:event_id',
    summary: 'One event sent to an endpoint (by delivery id or event id), with the payload it carries',
    operation: 'api',
    scope: 'webhooks:read',
    handler: async ({ deps, workspace, params }) => {
      const { delivery, payload } = await deps.services.webhooks.deliveryPayload(
        workspace.id,
        params.id!,
        params.event_id!,
      );
      return { object: 'webhook_event', ...eventLog(delivery), next_attempt_at: delivery.next_attempt_at, payload };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id/events/:event_id/attempts',
    summary: 'The attempts to send one event to an endpoint, oldest first',
    operation: 'api',
    scope: 'webhooks:read',
    handler: async ({ deps, workspace, params, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const { attempts } = await deps.services.webhooks.getDelivery(workspace.id, params.id!, params.event_id!);
      const start = page.after === undefined ? page.offset : attempts.findIndex((a) => a.id === page.after) + 1;
      const slice = attempts.slice(start, start + page.limit);
      return cursorList(slice.map(attemptLog), start + slice.length < attempts.length);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/events/:event_id/replay',
    summary: 'Send an event to the endpoint again now (the same as replaying its delivery)',
    operation: 'api',
    scope: 'webhooks:write',
    status: 202,
    handler: async ({ deps, workspace, params }) => {
      const delivery = await deps.services.webhooks.replay(workspace.id, params.id!, params.event_id!);
      return { object: 'webhook_event', ...delivery };
    },
  }),
];
