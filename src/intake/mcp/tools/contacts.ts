import { z } from 'zod';
import { TOPIC_SUBSCRIPTIONS } from '../../../services/marketing/topics.js';
import { parsePage } from '../../../store/infra/list-page.js';
import { CREATE, READ, WRITE, defineTool } from '../tool.js';

const page = { limit: z.number().int().min(1).max(100).optional(), offset: z.number().int().min(0).optional() };
const property = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const contactFields = {
  first_name: z.string().nullable().optional(),
  last_name: z.string().nullable().optional(),
  unsubscribed: z.boolean().optional().describe('true: opted out of marketing mail'),
  properties: z.record(z.string(), property).optional().describe('Custom fields; null removes one'),
};
const statusOf = (unsubscribed: boolean | undefined) =>
  unsubscribed === undefined ? undefined : unsubscribed ? ('unsubscribed' as const) : ('subscribed' as const);

/** Contacts are our subscribers, segments our audiences (one record, every surface). */
export const contactTools = [
  defineTool({
    name: 'contacts_list',
    title: 'List contacts',
    description:
      'Lists contacts, newest first, optionally only those subscribed or unsubscribed, or one address. Reads only.',
    family: 'contacts',
    scope: 'subscribers:read',
    operation: 'subscribers.read',
    rest: 'GET /v1/contacts',
    annotations: READ,
    input: z.object({
      ...page,
      status: z.enum(['subscribed', 'unsubscribed']).optional(),
      email: z.string().optional(),
    }),
    handler: async ({ deps, caller, args }) => {
      const { items, total, more } = await deps.services.subscribers.list(
        { workspaceId: caller.workspace.id, status: args.status, email: args.email },
        parsePage(args),
      );
      return { contacts: items, total, has_more: more };
    },
  }),
  defineTool({
    name: 'contacts_create',
    title: 'Add a contact',
    description:
      'Adds a contact (or updates the one with that address) and, with `segment_ids`, puts it in those segments. Writes rows; sends nothing.',
    family: 'contacts',
    scope: 'subscribers:write',
    operation: 'subscribers.write',
    rest: 'POST /v1/contacts',
    annotations: WRITE,
    input: z.object({ email: z.string(), ...contactFields, segment_ids: z.array(z.string()).max(100).optional() }),
    handler: async ({ deps, caller, args }) => {
      const workspaceId = caller.workspace.id;
      // Every segment is known before anything is written, as on POST /v1/contacts.
      for (const id of args.segment_ids ?? []) await deps.services.audiences.get(workspaceId, id);
      const { subscriber } = await deps.services.subscribers.upsert(workspaceId, {
        email: args.email,
        first_name: args.first_name,
        last_name: args.last_name,
        properties: args.properties,
        status: statusOf(args.unsubscribed),
      });
      for (const id of args.segment_ids ?? [])
        await deps.services.audiences.addMembers(workspaceId, id, { subscriberIds: [subscriber.id] });
      return subscriber;
    },
  }),
  defineTool({
    name: 'contacts_update',
    title: 'Change a contact',
    description: 'Changes a contact (by id or address): names, custom properties, or opting out. Writes one row.',
    family: 'contacts',
    scope: 'subscribers:write',
    operation: 'subscribers.write',
    rest: 'PATCH /v1/contacts/:id',
    annotations: WRITE,
    input: z.object({ id: z.string().describe('The contact id, or its address'), ...contactFields }),
    handler: ({ deps, caller, args }) =>
      deps.services.subscribers.update(caller.workspace.id, args.id, {
        first_name: args.first_name,
        last_name: args.last_name,
        properties: args.properties,
        status: statusOf(args.unsubscribed),
      }),
  }),
  defineTool({
    name: 'segments_list',
    title: 'List segments',
    description: 'Lists segments (audiences) with their member counts. Reads only.',
    family: 'contacts',
    scope: 'audiences:read',
    operation: 'api',
    rest: 'GET /v1/segments',
    annotations: READ,
    input: z.object(page),
    handler: async ({ deps, caller, args }) => {
      const { items, total, more } = await deps.services.audiences.list(caller.workspace.id, parsePage(args));
      return { segments: items, total, has_more: more };
    },
  }),
  defineTool({
    name: 'segments_create',
    title: 'Create a segment',
    description:
      'Creates a segment: contacts added to it, and with `conditions` every contact whose properties meet them. Writes one row.',
    family: 'contacts',
    scope: 'audiences:write',
    operation: 'api',
    rest: 'POST /v1/segments',
    annotations: CREATE,
    idempotent: true,
    input: z.object({
      name: z.string(),
      conditions: z
        .array(z.record(z.string(), z.unknown()))
        .max(20)
        .optional()
        .describe('Conditions on contact properties, as POST /v1/segments takes them'),
    }),
    handler: ({ deps, caller, args }) =>
      deps.services.audiences.create(caller.workspace.id, args.name, args.conditions),
  }),
  defineTool({
    name: 'segments_update',
    title: 'Change a segment',
    description: 'Renames a segment, or sets its conditions (null removes them). Writes one row.',
    family: 'contacts',
    scope: 'audiences:write',
    operation: 'api',
    rest: 'PATCH /v1/segments/:id',
    annotations: WRITE,
    input: z.object({
      id: z.string(),
      name: z.string().optional(),
      conditions: z.array(z.record(z.string(), z.unknown())).max(20).nullable().optional(),
    }),
    handler: async ({ deps, caller, args }) => {
      let view = await deps.services.audiences.get(caller.workspace.id, args.id);
      if (args.name !== undefined) view = await deps.services.audiences.rename(caller.workspace.id, args.id, args.name);
      if (args.conditions !== undefined)
        view = await deps.services.audiences.setConditions(caller.workspace.id, args.id, args.conditions);
      return view;
    },
  }),
  defineTool({
    name: 'topics_list',
    title: 'List topics',
    description: 'Lists the topics contacts can opt in to or out of in the preference centre. Reads only.',
    family: 'contacts',
    scope: 'subscribers:read',
    operation: 'api',
    rest: 'GET /v1/topics',
    annotations: READ,
    input: z.object({}),
    handler: async ({ deps, caller }) => ({ topics: await deps.services.topics.list(caller.workspace.id) }),
  }),
  defineTool({
    name: 'topics_create',
    title: 'Create a topic',
    description:
      'Creates a topic; `default_subscription` says whether contacts are in it until they opt out (opt_out) or only once they opt in (opt_in). Writes one row.',
    family: 'contacts',
    scope: 'subscribers:write',
    operation: 'api',
    rest: 'POST /v1/topics',
    annotations: CREATE,
    idempotent: true,
    input: z.object({
      name: z.string(),
      description: z.string().nullable().optional(),
      default_subscription: z.enum(TOPIC_SUBSCRIPTIONS),
    }),
    handler: ({ deps, caller, args }) => deps.services.topics.create(caller.workspace.id, args),
  }),
  defineTool({
    name: 'topics_update',
    title: 'Change a topic',
    description: 'Renames a topic or changes its description. Writes one row.',
    family: 'contacts',
    scope: 'subscribers:write',
    operation: 'api',
    rest: 'PATCH /v1/topics/:id',
    annotations: WRITE,
    input: z.object({ id: z.string(), name: z.string().optional(), description: z.string().nullable().optional() }),
    handler: ({ deps, caller, args }) =>
      deps.services.topics.update(caller.workspace.id, args.id, { name: args.name, description: args.description }),
  }),
];
