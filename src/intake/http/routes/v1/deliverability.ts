import { defineRoute } from '../../route.js';

/** Deliverability: the reputation guard of each sending domain, and resuming a paused one. */
export const v1ReputationRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/reputation',
    summary: "The reputation guard's view of every sending domain: hard-bounce and complaint rates, state (sending, warning, paused) and held mail",
    operation: 'api',
    scope: 'domains:read',
    handler: async ({ deps, workspace }) => ({ object: 'list', data: await deps.services.reputation.list(workspace.id) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/domains/:id/reputation',
    summary: "One sending domain's reputation guard state (by id or name)",
    operation: 'api',
    scope: 'domains:read',
    handler: ({ deps, workspace, params }) => deps.services.reputation.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/domains/:id/reputation/resume',
    summary: "Resumes a paused domain: its held marketing mail is released, and its rates count from now on",
    operation: 'api',
    scope: 'domains:write',
    handler: ({ deps, workspace, params }) => deps.services.reputation.resume(workspace.id, params.id!),
  }),
];
