import { z } from 'zod';
import { defineRoute } from '../../route.js';

const fallback = z.union([z.string(), z.number(), z.boolean(), z.null()]).optional();

/** Resend's contact properties: typed custom fields of contacts, with fallback values for templates. */
export const v1ContactPropertyRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/contact-properties',
    summary: 'Declare a contact property: key, type (string, number, boolean, date) and fallback value',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    status: 201,
    body: z.object({ key: z.string().optional(), type: z.string().optional(), fallback_value: fallback }),
    handler: ({ deps, workspace, body }) => deps.services.contactProperties.create(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contact-properties',
    summary: "List the workspace's contact properties, newest first (limit, after, before)",
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: ({ deps, workspace, query }) =>
      deps.services.contactProperties.list(workspace.id, query as Record<string, unknown>),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contact-properties/:id',
    summary: 'Read one contact property (by id or key)',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: ({ deps, workspace, params }) => deps.services.contactProperties.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/contact-properties/:id',
    summary: "Change a contact property's fallback value (its key and type stay)",
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    body: z.object({ fallback_value: fallback }),
    handler: ({ deps, workspace, params, body }) =>
      deps.services.contactProperties.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/contact-properties/:id',
    summary: "Remove a contact property: contacts' values stay, unchecked and without fallback",
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.contactProperties.remove(workspace.id, params.id!);
      return { object: 'contact_property', id: removed.id, deleted: true };
    },
  }),
];
