import { defineRoute } from '../../route.js';

/** Delivery's state across the running nodes: the operator's (master key). */
export const v1DeliveryRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/delivery/providers',
    summary:
      'Each destination (a mailbox provider, or an MX host of none, seen from one source address) as the running nodes reported it in the last 30 s: state (normal, backoff, paused), current and configured limits, the last slow-down reply and until when (master key)',
    operation: null,
    scope: 'domains:read',
    master: true,
    handler: async ({ deps }) => {
      const data = (await deps.services.queue.providers()).map((p) => ({ object: 'delivery_provider' as const, ...p }));
      return { object: 'list', has_more: false, data };
    },
  }),
];
