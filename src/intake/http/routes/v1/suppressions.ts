import { z } from 'zod';
import { SUPPRESSION_REASONS, SUPPRESSION_SCOPES } from '../../../../services/suppressions.js';
import { offsetList, parsePage } from '../../pagination.js';
import { defineRoute } from '../../route.js';

const addSuppressionBody = z.object({
  email: z.string().max(320).optional(),
  domain: z.string().max(253).optional(),
  reason: z.enum(SUPPRESSION_REASONS).optional(),
  scope: z.enum(SUPPRESSION_SCOPES).optional(),
  detail: z.string().max(1000).optional(),
});

export const v1SuppressionRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/suppressions',
    summary: 'List suppressed addresses and domains (offset pagination, newest first)',
    operation: 'api',
    scope: 'suppressions:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const { items, total } = await deps.services.suppressions.list(workspace.id, page);
      return offsetList('suppressions', items, total, page);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/suppressions',
    summary: 'Suppress an address (email) or a whole domain (domain), with a reason',
    operation: 'api',
    scope: 'suppressions:write',
    body: addSuppressionBody,
    status: 201,
    handler: ({ deps, workspace, body }) => deps.services.suppressions.add(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/suppressions/:email',
    summary: 'Whether an address (or @domain) is suppressed, and why',
    operation: 'api',
    scope: 'suppressions:read',
    handler: ({ deps, workspace, params }) => deps.services.suppressions.get(workspace.id, params.email!),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/suppressions/:email',
    summary: 'Remove an address (or @domain) from the suppression list',
    operation: 'api',
    scope: 'suppressions:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.suppressions.remove(workspace.id, params.email!);
      return { email: removed.email, deleted: true };
    },
  }),
];
