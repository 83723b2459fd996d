import { z } from 'zod';
import { parsePage } from '../../../../store/infra/list-page.js';
import type { RouteView } from '../../../../services/receiving/routes.js';
import { notFound, validationError } from '../../../../shared/errors.js';
import { defineRoute, type HandlerInput } from '../../route.js';

/**
 * Resend's inboxes over our routes: an inbox is a route for one address. Its threads, labels,
 * drafts and agent are served by inbox-threads.ts and inbox-drafts.ts; `unread` counts its
 * threads with an unread message, `drafts` its drafts not yet sent.
 */

const inboxView = (r: RouteView, counts = { unread: 0, drafts: 0 }) => ({
  object: 'inbox' as const,
  id: r.id,
  name: r.name,
  email_address: r.address,
  domain_id: r.domain_id,
  receiving_address: null,
  from_name: r.from_name,
  unread: counts.unread,
  drafts: counts.drafts,
  last_received: r.last_received_at,
  created_at: r.created_at,
  updated_at: r.updated_at,
  action: r.action,
});

const createInboxBody = z.object({
  email_address: z.string().max(320),
  name: z.string().max(200).nullable().optional(),
  from_name: z.string().max(200).nullable().optional(),
  forwarding: z.boolean().optional(),
});

const updateInboxBody = z.object({
  name: z.string().max(200).nullable().optional(),
  from_name: z.string().max(200).nullable().optional(),
});

/** The route of an inbox: by id or address, and only a route for one address. */
async function findInbox({ deps, workspace, params }: HandlerInput<unknown, unknown>): Promise<RouteView> {
  const route = await deps.services.routes.get(workspace.id, params.id!);
  if (route.kind !== 'address') throw notFound(`Inbox ${params.id}`);
  return route;
}

export const v1InboxRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes',
    summary: 'List inboxes (routes for one address), oldest first, with keyset pagination (limit, after, before)',
    operation: 'api',
    scope: 'receiving:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: async ({ deps, workspace, query }) => {
      const { items, more } = await deps.services.routes.page(workspace.id, 'address', parsePage(query, 'keyset'));
      const counts = await deps.services.inboxThreads.counts(items.map((r) => r.id));
      return { object: 'list', has_more: more, data: items.map((r) => inboxView(r, counts.get(r.id))) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/inboxes',
    summary: 'Create an inbox: a route for one address of a verified domain whose mail emits email.received',
    operation: 'api',
    scope: 'receiving:write',
    body: createInboxBody,
    status: 201,
    handler: async ({ deps, workspace, body }) => {
      if (body.forwarding) throw validationError('forwarding', 'is not supported: use a webhook on email.received');
      // `*` is what makes a route address a pattern.
      if (body.email_address.includes('*')) {
        throw validationError(
          'email_address',
          'an inbox is one address; use POST /v1/receiving/routes for patterns and catch-alls',
        );
      }
      return inboxView(
        await deps.services.routes.add(workspace.id, {
          address: body.email_address,
          name: body.name,
          from_name: body.from_name,
        }),
      );
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id',
    summary: 'Read one inbox (by id or address)',
    operation: 'api',
    scope: 'receiving:read',
    handler: async (input) => {
      const inbox = await findInbox(input);
      return inboxView(inbox, (await input.deps.services.inboxThreads.counts([inbox.id])).get(inbox.id));
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/inboxes/:id',
    summary: "Change an inbox's name or from_name",
    operation: 'api',
    scope: 'receiving:write',
    body: updateInboxBody,
    handler: async (input) => {
      const inbox = await findInbox(input);
      return inboxView(await input.deps.services.routes.update(input.workspace.id, inbox.id, input.body));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/inboxes/:id',
    summary: 'Delete an inbox; its address is refused at RCPT TO from then on (unless another route covers it)',
    operation: 'api',
    scope: 'receiving:write',
    handler: async (input) => {
      const inbox = await findInbox(input);
      await input.deps.services.routes.remove(input.workspace.id, inbox.id);
      return { object: 'inbox', id: inbox.id, deleted: true };
    },
  }),
];
