import { defineRoute } from '../../route.js';
import { addDomainBody } from '../v1/domains.js';

export const legacyDomainRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v1/domains',
    summary: 'Register a sending domain',
    operation: 'domains.write',
    scope: 'domains:write',
    body: addDomainBody,
    status: 201,
    handler: async ({ deps, workspace, body }) => ({
      success: true,
      domain: await deps.services.domains.add(workspace.id, body),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/api/v1/domains',
    summary: 'List sending domains',
    operation: 'domains.read',
    scope: 'domains:read',
    handler: async ({ deps, workspace }) => ({
      success: true,
      domains: await deps.services.domains.list(workspace.id),
    }),
  }),
];
