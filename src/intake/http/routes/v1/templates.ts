import { z } from 'zod';
import { offsetList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute } from '../../route.js';

const variable = z.object({
  key: z.string(),
  type: z.enum(['string', 'number']),
  fallback_value: z.union([z.string(), z.number()]).nullable().optional(),
  sample_value: z
    .union([z.string(), z.number()])
    .nullable()
    .optional()
    .describe('Filled in by previews when they are given no value; never sent'),
});

const templateFields = {
  name: z.string(),
  subject: z.string().nullable().optional(),
  html: z.string().optional().describe('The HTML body (or give mjml)'),
  mjml: z
    .string()
    .optional()
    .describe('The body in MJML, compiled to html under strict validation; its errors are 400s naming their lines'),
  inline_css: z
    .boolean()
    .optional()
    .describe(
      'With html: move the CSS of its <style> elements into style attributes (juice), for clients that drop <style>',
    ),
  text: z.string().nullable().optional(),
  alias: z.string().nullable().optional(),
  from: z.string().nullable().optional(),
  reply_to: z
    .union([z.string(), z.array(z.string()).max(50)])
    .nullable()
    .optional(),
  variables: z.array(variable).nullable().optional(),
};

const templateBody = z.object(templateFields);

export const v1TemplateRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/templates',
    summary:
      'Create a template (a draft): html and optional subject, text, alias, from, reply_to and declared variables with fallbacks',
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
    summary: 'List templates (offset or cursor pagination)',
    operation: 'api',
    scope: 'templates:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const { items, total, more } = await deps.services.templates.list(workspace.id, page);
      return offsetList('templates', items, total, page, more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/templates/:id',
    summary: 'Read one template, by id or alias',
    operation: 'api',
    scope: 'templates:read',
    handler: ({ deps, workspace, params }) => deps.services.templates.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/templates/:id',
    summary: 'Change a template (by id or alias); mail keeps the published version until it is published again',
    operation: 'api',
    scope: 'templates:write',
    body: templateBody.partial(),
    handler: ({ deps, workspace, params, body }) => deps.services.templates.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/templates/:id',
    summary: 'Delete a template (by id or alias)',
    operation: 'api',
    scope: 'templates:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.templates.remove(workspace.id, params.id!);
      return { object: 'template', id: removed.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/templates/:id/publish',
    summary: 'Publish a template: its current content becomes the version mail is sent with',
    operation: 'api',
    scope: 'templates:write',
    handler: ({ deps, workspace, params }) => deps.services.templates.publish(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/templates/:id/duplicate',
    summary: 'Copy a template into a new draft',
    operation: 'api',
    scope: 'templates:write',
    status: 201,
    handler: ({ deps, workspace, params }) => deps.services.templates.duplicate(workspace.id, params.id!),
  }),
];

const version = z.number().int().min(1).optional().describe('A published version (default: the current draft)');

/** The studio: versions, previews and client checks, over the same service as the MCP tools. */
export const v1TemplateStudioRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/templates/generate',
    summary:
      'Ask the configured model (inboxes.agent.url) for an MJML template from a description: saved as a draft, compiled and checked; nothing is published (409 without a model, 503 when its answer is not a valid template)',
    operation: 'api',
    scope: 'templates:write',
    status: 201,
    body: z.object({ description: z.string().describe('What the email is for, its tone and brand') }),
    handler: ({ deps, workspace, body }) => deps.services.templates.generate(workspace.id, body.description),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/templates/:id/versions',
    summary: 'The published versions of a template, newest first; `published` marks the one sends use',
    operation: 'api',
    scope: 'templates:read',
    handler: async ({ deps, workspace, params }) => {
      const data = await deps.services.templates.versions(workspace.id, params.id!);
      return { object: 'list', has_more: false, data };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/templates/:id/versions/:version/restore',
    summary: "Make a published version's content the template's draft again (publish to send it)",
    operation: 'api',
    scope: 'templates:write',
    handler: ({ deps, workspace, params }) =>
      deps.services.templates.restore(workspace.id, params.id!, Number(params.version)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/templates/:id/preview',
    summary:
      "Render a template with variables (given, else each variable's sample, else its fallback): subject, HTML and text, and which variables are missing or unknown",
    operation: 'api',
    scope: 'templates:read',
    body: z.object({ variables: z.record(z.string(), z.unknown()).optional(), version }),
    handler: ({ deps, workspace, params, body }) => deps.services.templates.preview(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/templates/:id/check',
    summary:
      "What would break the template in mail clients: HTML and CSS that Gmail, Outlook, Apple Mail, Yahoo or Samsung Email lack (caniemail.com's data), size over Gmail's 102 KB clipping, images without alt, http links, a marketing template without an unsubscribe link, undeclared variables",
    operation: 'api',
    scope: 'templates:read',
    body: z.object({ type: z.enum(['transactional', 'marketing']).optional(), version }),
    handler: ({ deps, workspace, params, body }) => deps.services.templates.check(workspace.id, params.id!, body),
  }),
];
