import { z } from 'zod';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../../../store/infra/list-page.js';
import { ROUTE_ACTIONS, ROUTE_KINDS } from '../../../../store/receiving.js';
import { offsetList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute } from '../../route.js';

const routeBody = z.object({
  address: z
    .string()
    .max(320)
    .describe(
      'support@example.com, a local-part pattern such as reply+*@example.com, or *@example.com for the whole domain',
    ),
  action: z
    .enum(ROUTE_ACTIONS)
    .optional()
    .describe(
      'webhook (default): store and emit email.received; store: store only; reject: refuse at RCPT TO with 550',
    ),
  name: z.string().max(200).nullable().optional(),
  from_name: z.string().max(200).nullable().optional(),
});

const routeChanges = z.object({
  action: z.enum(ROUTE_ACTIONS).optional(),
  name: z.string().max(200).nullable().optional(),
  from_name: z.string().max(200).nullable().optional(),
});

const receivedListQuery = z.looseObject({
  limit: z.string().optional().describe(`Messages per page, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`),
  after: z
    .string()
    .optional()
    .describe('A received email id: the page of messages older than it (next_cursor of the previous page)'),
  before: z.string().optional().describe('A received email id: the page of messages newer than it'),
});

// The type a message gave its attachment is the sender's word: only a well-formed one is served.
const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** Which addresses of the workspace's verified domains take mail, and what happens to it. */
export const v1RouteRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/receiving/routes',
    summary: 'List receiving routes (offset pagination, oldest first)',
    operation: 'api',
    scope: 'receiving:read',
    paginated: true,
    query: z.looseObject({ kind: z.enum(ROUTE_KINDS).optional() }),
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query);
      const { items, total } = await deps.services.routes.list(workspace.id, { ...page, kind: query.kind });
      return offsetList('routes', items, total, page, page.offset + items.length < total);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/receiving/routes',
    summary: 'Add a route: an address, a local-part pattern or a catch-all of a verified domain, and its action',
    operation: 'api',
    scope: 'receiving:write',
    body: routeBody,
    status: 201,
    handler: ({ deps, workspace, body }) => deps.services.routes.add(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/receiving/routes/:id',
    summary: 'Read one route (by id or address)',
    operation: 'api',
    scope: 'receiving:read',
    handler: ({ deps, workspace, params }) => deps.services.routes.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/receiving/routes/:id',
    summary: "Change a route's action or names",
    operation: 'api',
    scope: 'receiving:write',
    body: routeChanges,
    handler: ({ deps, workspace, params, body }) => deps.services.routes.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/receiving/routes/:id',
    summary: 'Remove a route; its address is refused at RCPT TO from then on (unless another route covers it)',
    operation: 'api',
    scope: 'receiving:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.routes.remove(workspace.id, params.id!);
      return { object: 'route', id: removed.id, deleted: true };
    },
  }),
];

/** Received messages, in Resend's `emails.receiving` shapes (listed before `/v1/emails/:id`, which would match them). */
export const v1ReceivedEmailRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/emails/receiving',
    summary: 'List received messages, newest first, with keyset pagination (limit, after, before)',
    operation: 'api',
    scope: 'receiving:read',
    query: receivedListQuery,
    handler: ({ deps, workspace, query }) => deps.services.receivedEmails.list(workspace.id, query),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/receiving/:id',
    summary:
      'Read one received message: parsed fields, text and HTML as received, headers, authentication results, the sent email it answers',
    operation: 'api',
    scope: 'receiving:read',
    handler: ({ deps, workspace, params }) => deps.services.receivedEmails.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/receiving/:id/raw',
    summary: 'The received message exactly as it arrived (message/rfc822)',
    operation: 'api',
    scope: 'receiving:read',
    responseType: 'message/rfc822',
    handler: ({ deps, workspace, params }) => deps.services.receivedEmails.raw(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/receiving/:id/attachments',
    summary: "A received message's attachments, with their download URLs",
    operation: 'api',
    scope: 'receiving:read',
    handler: async ({ deps, workspace, params }) => ({
      object: 'list',
      has_more: false,
      data: await deps.services.receivedEmails.attachments(workspace.id, params.id!),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/receiving/:id/attachments/:attachment_id',
    summary: 'One attachment of a received message, with its download URL',
    operation: 'api',
    scope: 'receiving:read',
    handler: async ({ deps, workspace, params }) => ({
      object: 'attachment',
      ...(await deps.services.receivedEmails.attachment(workspace.id, params.id!, params.attachment_id!)),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/receiving/:id/attachments/:attachment_id/content',
    summary: 'The bytes of one attachment (Content-Disposition: attachment)',
    operation: 'api',
    scope: 'receiving:read',
    responseType: 'application/octet-stream',
    handler: async ({ ctx, deps, workspace, params }) => {
      const file = await deps.services.receivedEmails.attachmentContent(
        workspace.id,
        params.id!,
        params.attachment_id!,
      );
      ctx.attachment(file.filename ?? 'attachment', { type: 'attachment' });
      ctx.type = MIME_TYPE.test(file.contentType) ? file.contentType : 'application/octet-stream';
      // Served from the API's origin: never sniffed, never run as a page.
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
      return file.content;
    },
  }),
];
