import { z } from 'zod';
import { defineRoute } from '../../route.js';

export const addDomainBody = z.object({
  domain: z.string().min(1).max(253),
  external_id: z.string().max(255).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const v1DomainRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/domains',
    summary: 'List sending domains (no pagination)',
    operation: 'domains.read',
    scope: 'domains:read',
    handler: async ({ deps, workspace }) => ({ domains: await deps.services.domains.list(workspace.id) }),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/domains',
    summary: 'Add a sending domain; returns its DKIM tokens and the DNS records to publish',
    operation: 'domains.write',
    scope: 'domains:write',
    body: addDomainBody,
    status: 201,
    handler: ({ deps, workspace, body }) => deps.services.domains.add(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/domains/:id',
    summary: 'Read one domain (by id or name)',
    operation: 'domains.read',
    scope: 'domains:read',
    handler: ({ deps, workspace, params }) => deps.services.domains.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/domains/:id/verify',
    summary: 'Check DNS now: the domain becomes verified when every DKIM record matches; its deliverability checks are run again',
    operation: 'domains.write',
    scope: 'domains:write',
    handler: async ({ deps, workspace, params }) => (await deps.services.domains.verify(workspace.id, params.id!)).domain,
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/domains/:id',
    summary: 'Remove a domain and its DKIM keys',
    operation: 'domains.write',
    scope: 'domains:write',
    handler: async ({ deps, workspace, params }) => {
      const domain = await deps.services.domains.get(workspace.id, params.id!);
      await deps.services.domains.remove(workspace.id, domain.id);
      return { id: domain.id, deleted: true };
    },
  }),
];
