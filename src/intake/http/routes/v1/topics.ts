import { z } from 'zod';
import { TOPIC_SUBSCRIPTIONS } from '../../../../services/marketing/topics.js';
import { cursorList } from '../../pagination.js';
import { defineRoute } from '../../route.js';

/** Topics: subjects contacts opt in to or out of; a broadcast may go to one (see services/marketing/topics.ts). */
export const v1TopicRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/topics',
    summary: 'Create a topic: name, description, and what contacts who never chose get (`default_subscription`)',
    operation: 'api',
    scope: 'subscribers:write',
    idempotent: true,
    status: 201,
    body: z.object({
      name: z.string(),
      description: z.string().nullable().optional(),
      default_subscription: z.enum(TOPIC_SUBSCRIPTIONS),
    }),
    handler: ({ deps, workspace, body }) => deps.services.topics.create(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/topics',
    summary: 'List every topic',
    operation: 'api',
    scope: 'subscribers:read',
    handler: async ({ deps, workspace }) => cursorList(await deps.services.topics.list(workspace.id), false),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/topics/:id',
    summary: 'Read one topic',
    operation: 'api',
    scope: 'subscribers:read',
    handler: ({ deps, workspace, params }) => deps.services.topics.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/topics/:id',
    summary: "Change a topic's name or description (its default stays: contacts' standing must not change behind them)",
    operation: 'api',
    scope: 'subscribers:write',
    body: z.object({ name: z.string().optional(), description: z.string().nullable().optional() }),
    handler: ({ deps, workspace, params, body }) => deps.services.topics.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/topics/:id',
    summary: "Delete a topic and the contacts' choices about it",
    operation: 'api',
    scope: 'subscribers:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.topics.remove(workspace.id, params.id!);
      return { object: 'topic', id: removed.id, deleted: true };
    },
  }),
];
