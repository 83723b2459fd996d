import { z } from 'zod';
import { defineRoute } from '../../route.js';

const registerBody = z.object({
  url: z.string().min(1),
  events: z.array(z.string()),
  secret: z.string(),
  description: z.string().nullable().optional(),
});

export const legacyWebhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v1/webhooks',
    summary: 'Register an endpoint with a caller-chosen whsec_ secret (never echoed back)',
    operation: 'api',
    scope: 'webhooks:write',
    body: registerBody,
    status: 201,
    handler: async ({ deps, workspace, body }) => {
      const { webhook } = await deps.services.webhooks.register(workspace.id, 'legacy', body);
      return { success: true, webhook };
    },
  }),
];
