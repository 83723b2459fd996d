import { z } from 'zod';
import { templateView } from '../../../../services/templates.js';
import { offsetList, parsePage } from '../../pagination.js';
import { defineRoute } from '../../route.js';

const templateBody = z.object({
  name: z.string(),
  subject: z.string(),
  html: z.string(),
  text: z.string().nullable().optional(),
});

export const v1TemplateRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/templates',
    summary: 'Create a template: subject, html and optional text with {{variables}}',
    operation: 'api',
    scope: 'templates:write',
    idempotent: true,
    status: 201,
    body: templateBody,
    handler: ({ deps, workspace, body }) => deps.services.templates.create(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/templates',
    summary: 'List templates (offset pagination)',
    operation: 'api',
    scope: 'templates:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const { items, total } = await deps.services.templates.list(workspace.id, page);
      return offsetList('templates', items, total, page);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/templates/:id',
    summary: 'Read one template',
    operation: 'api',
    scope: 'templates:read',
    handler: async ({ deps, workspace, params }) => templateView(await deps.services.templates.get(workspace.id, params.id!)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/templates/:id',
    summary: 'Change a template',
    operation: 'api',
    scope: 'templates:write',
    body: templateBody.partial(),
    handler: ({ deps, workspace, params, body }) => deps.services.templates.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/templates/:id',
    summary: 'Delete a template',
    operation: 'api',
    scope: 'templates:write',
    handler: async ({ deps, workspace, params }) => {
      await deps.services.templates.remove(workspace.id, params.id!);
      return { id: params.id, deleted: true };
    },
  }),
];
