import { z } from 'zod';
import type { IpPoolView } from '../../../../services/ip-pools.js';
import { defineRoute } from '../../route.js';

const address = z.object({ address: z.string().max(100), ehlo: z.string().max(253).optional() });
const poolBody = z.object({ name: z.string().max(100).optional(), addresses: z.array(address).max(1000).optional() });

const render = (p: IpPoolView) => ({ object: 'ip_pool' as const, ...p });

/** IP pools: the operator's (master key), instance-wide (docs/deliverability.md, IP pools). */
export const v1IpPoolRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/ip-pools',
    summary: 'List IP pools with their addresses (master key)',
    operation: null,
    scope: 'domains:read',
    master: true,
    handler: async ({ deps }) => {
      const data = (await deps.services.ipPools.list()).map(render);
      return { object: 'list', has_more: false, data };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/ip-pools',
    summary:
      'Create an IP pool: `name` and `addresses` ([{ address, ehlo }]; ehlo defaults to delivery.hostname) (master key)',
    operation: null,
    scope: 'domains:write',
    master: true,
    body: poolBody,
    status: 201,
    handler: async ({ deps, body }) => render(await deps.services.ipPools.create(body)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/ip-pools/warmup',
    summary:
      'Put an address of a pool in warm-up, from day 1: `address`, and `schedule` (daily caps per provider; default: delivery.warmup, 50 doubling to the target) (master key)',
    operation: null,
    scope: 'domains:write',
    master: true,
    body: z.object({ address: z.string().max(100), schedule: z.array(z.number().int()).max(1000).optional() }),
    handler: async ({ deps, body }) => ({
      object: 'ip_warmup' as const,
      ...(await deps.services.ipPools.startWarmup(body.address, body.schedule)),
    }),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/ip-pools/warmup/:address',
    summary: "End an address's warm-up: it sends as a warm address (master key)",
    operation: null,
    scope: 'domains:write',
    master: true,
    handler: async ({ deps, params }) => ({
      object: 'ip_warmup' as const,
      ...(await deps.services.ipPools.stopWarmup(params.address!)),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/ip-pools/:id',
    summary: 'An IP pool, by id or name (master key)',
    operation: null,
    scope: 'domains:read',
    master: true,
    handler: async ({ deps, params }) => render(await deps.services.ipPools.get(params.id!)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/ip-pools/:id',
    summary: 'Rename an IP pool (`name`) or replace its addresses (`addresses`) (master key)',
    operation: null,
    scope: 'domains:write',
    master: true,
    body: poolBody,
    handler: async ({ deps, params, body }) => render(await deps.services.ipPools.update(params.id!, body)),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/ip-pools/:id',
    summary:
      'Delete an IP pool; refused (409) while a domain or workspace names it or mail waits to leave through it (master key)',
    operation: null,
    scope: 'domains:write',
    master: true,
    handler: async ({ deps, params }) => {
      const removed = await deps.services.ipPools.remove(params.id!);
      return { object: 'ip_pool', id: removed.id, deleted: true };
    },
  }),
];
