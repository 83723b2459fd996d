import { z } from 'zod';
import { WEBHOOK_DELIVERY_STATUSES } from '../../../../store/tables.js';
import { offsetList, parsePage } from '../../pagination.js';
import { defineRoute } from '../../route.js';

const createBody = z.object({
  url: z.string().min(1),
  events: z.array(z.string()),
  description: z.string().nullable().optional(),
});

const updateBody = z.object({
  url: z.string().min(1).optional(),
  events: z.array(z.string()).optional(),
  description: z.string().nullable().optional(),
  status: z.enum(['enabled', 'disabled']).optional(),
});

const deliveriesQuery = z.looseObject({ status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional() });

export const v1WebhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks',
    summary: 'Register an endpoint; the answer carries its signing secret, in full, this once',
    operation: 'api',
    scope: 'webhooks:write',
    body: createBody,
    status: 201,
    handler: async ({ deps, workspace, body }) => {
      const { webhook, secret } = await deps.services.webhooks.register(workspace.id, 'v1', body);
      return { ...webhook, secret };
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
      const { items, total } = await deps.services.webhooks.list(workspace.id, page);
      return offsetList('webhooks', items, total, page);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id',
    summary: 'Read one endpoint (secret masked)',
    operation: 'api',
    scope: 'webhooks:read',
    handler: ({ deps, workspace, params }) => deps.services.webhooks.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/webhooks/:id',
    summary: 'Change the URL, events or description, or disable and re-enable the endpoint',
    operation: 'api',
    scope: 'webhooks:write',
    body: updateBody,
    handler: ({ deps, workspace, params, body }) => deps.services.webhooks.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/webhooks/:id',
    summary: 'Remove an endpoint with its deliveries',
    operation: 'api',
    scope: 'webhooks:write',
    handler: async ({ deps, workspace, params }) => {
      await deps.services.webhooks.remove(workspace.id, params.id!);
      return { id: params.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/rotate-secret',
    summary: 'Replace the signing secret; the previous one keeps signing for 24 hours',
    operation: 'api',
    scope: 'webhooks:write',
    handler: async ({ deps, workspace, params }) => {
      const { webhook, secret } = await deps.services.webhooks.rotateSecret(workspace.id, params.id!);
      return { ...webhook, secret };
    },
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
      const page = parsePage(query as Record<string, unknown>);
      const { items, total } = await deps.services.webhooks.listDeliveries(workspace.id, params.id!, { status: query.status }, page);
      return offsetList('deliveries', items, total, page);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries/:delivery_id',
    summary: 'Read one delivery with every attempt',
    operation: 'api',
    scope: 'webhooks:read',
    handler: ({ deps, workspace, params }) => deps.services.webhooks.getDelivery(workspace.id, params.id!, params.delivery_id!),
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
      const { items, total } = await deps.services.webhooks.listAttempts(workspace.id, params.id!, params.delivery_id!, page);
      return offsetList('attempts', items, total, page);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/deliveries/:delivery_id/replay',
    summary: 'Send a delivery again now, with a fresh retry schedule',
    operation: 'api',
    scope: 'webhooks:write',
    status: 202,
    handler: ({ deps, workspace, params }) => deps.services.webhooks.replay(workspace.id, params.id!, params.delivery_id!),
  }),
];
