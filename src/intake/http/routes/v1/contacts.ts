import { z } from 'zod';
import type { SubscriberView } from '../../../../services/marketing/subscribers.js';
import { TOPIC_SUBSCRIPTIONS } from '../../../../services/marketing/topics.js';
import { isAppError, notFound, validationError } from '../../../../shared/errors.js';
import type { HttpDeps } from '../../context.js';
import { cursorList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute, type HandlerInput } from '../../route.js';

/**
 * Resend's contacts: a view on our subscribers (one record, two surfaces). `unsubscribed` is
 * the subscriber's status, `properties` its metadata, segments its audiences, topics its
 * subscription preferences. A contact is named by id or by email address in paths.
 */

const property = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const topicChoice = z.object({ id: z.string(), subscription: z.enum(TOPIC_SUBSCRIPTIONS) });

const createBody = z.object({
  email: z.string(),
  first_name: z.string().nullable().optional(),
  last_name: z.string().nullable().optional(),
  unsubscribed: z.boolean().optional(),
  properties: z.record(z.string(), property).optional(),
  segments: z
    .array(z.object({ id: z.string() }))
    .max(100)
    .optional(),
  topics: z.array(topicChoice).max(100).optional(),
});

const updateBody = z.object({
  first_name: z.string().nullable().optional(),
  last_name: z.string().nullable().optional(),
  unsubscribed: z.boolean().optional(),
  properties: z.record(z.string(), property).optional(),
});

type PropertyValue = { type: 'string'; value: string } | { type: 'number'; value: number };

/** Metadata as Resend's typed properties: numbers stay numbers, anything else is a string. */
const propertiesOf = (metadata: Record<string, unknown> | null): Record<string, PropertyValue> =>
  Object.fromEntries(
    Object.entries(metadata ?? {}).map(([k, v]): [string, PropertyValue] => [
      k,
      typeof v === 'number'
        ? { type: 'number', value: v }
        : { type: 'string', value: typeof v === 'string' ? v : JSON.stringify(v) },
    ]),
  );

export const renderContact = (s: SubscriberView) => ({
  object: 'contact' as const,
  id: s.id,
  email: s.email,
  first_name: s.first_name,
  last_name: s.last_name,
  unsubscribed: s.status === 'unsubscribed',
  properties: propertiesOf(s.metadata),
  status: s.status,
  tags: s.tags,
  external_id: s.external_id,
  created_at: s.created_at,
  updated_at: s.updated_at,
});

const statusOf = (unsubscribed: boolean | undefined) =>
  unsubscribed === undefined ? undefined : unsubscribed ? ('unsubscribed' as const) : ('subscribed' as const);

/** A segment id that names no audience of the workspace is a bad field, not a missing page. */
async function checkSegments(
  deps: HttpDeps,
  workspaceId: string,
  ids: string[],
  field: (i: number) => string,
): Promise<void> {
  for (const [i, id] of ids.entries()) {
    await deps.services.audiences.get(workspaceId, id).catch((err: unknown) => {
      throw isAppError(err) && err.code === 'not_found' ? validationError(field(i), `segment ${id} not found`) : err;
    });
  }
}

/** Creates (or, for a known address, updates) a contact, with its segments and topics. */
async function createContact(
  { deps, workspace }: HandlerInput<unknown, unknown>,
  body: z.infer<typeof createBody>,
  segmentIds: string[],
) {
  await checkSegments(deps, workspace.id, segmentIds, (i) => `segments[${i}].id`);
  for (const [i, t] of (body.topics ?? []).entries())
    await deps.services.topics.check(workspace.id, t.id, `topics[${i}].id`);
  const { subscriber } = await deps.services.subscribers.upsert(workspace.id, {
    email: body.email,
    first_name: body.first_name,
    last_name: body.last_name,
    properties: body.properties,
    status: statusOf(body.unsubscribed),
  });
  for (const id of segmentIds)
    await deps.services.audiences.addMembers(workspace.id, id, { subscriberIds: [subscriber.id] });
  if (body.topics?.length) await deps.services.topics.choose(workspace.id, subscriber.id, body.topics);
  return renderContact(subscriber);
}

const updateContact = async (
  { deps, workspace }: HandlerInput<unknown, unknown>,
  idOrEmail: string,
  body: z.infer<typeof updateBody>,
) =>
  renderContact(
    await deps.services.subscribers.update(workspace.id, idOrEmail, {
      first_name: body.first_name,
      last_name: body.last_name,
      properties: body.properties,
      status: statusOf(body.unsubscribed),
    }),
  );

/** The contact, which must be a member of the audience (the deprecated audience-scoped paths). */
async function memberOf(
  deps: HttpDeps,
  workspaceId: string,
  audienceId: string,
  idOrEmail: string,
): Promise<SubscriberView> {
  const contact = await deps.services.subscribers.get(workspaceId, idOrEmail);
  if (!(await deps.services.audiences.hasMember(workspaceId, audienceId, contact.id)))
    throw notFound(`Contact ${idOrEmail} in audience ${audienceId}`);
  return contact;
}

export const v1ContactRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/contacts',
    summary: 'Create a contact (a subscriber; an existing address is updated), in segments and with topic choices',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    idempotent: true,
    status: 201,
    body: createBody,
    handler: (input) =>
      createContact(
        input,
        input.body,
        (input.body.segments ?? []).map((s) => s.id),
      ),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contacts',
    summary: 'List contacts, newest first (cursor pagination: limit, after, before)',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: async ({ deps, workspace, query }) => {
      const { items, more } = await deps.services.subscribers.list(
        { workspaceId: workspace.id },
        parsePage(query as Record<string, unknown>),
      );
      return cursorList(items.map(renderContact), more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contacts/:id',
    summary: 'Read a contact by id or email',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: async ({ deps, workspace, params }) =>
      renderContact(await deps.services.subscribers.get(workspace.id, params.id!)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/contacts/:id',
    summary: 'Change a contact (by id or email): names, `unsubscribed`, properties (null removes one)',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    body: updateBody,
    handler: (input) => updateContact(input, input.params.id!, input.body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/contacts/:id',
    summary: 'Delete a contact (by id or email); its suppressions stay',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.subscribers.remove(workspace.id, params.id!);
      return { object: 'contact', contact: removed.id, id: removed.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contacts/:id/segments',
    summary: 'The segments (audiences) a contact is in',
    operation: 'subscribers.read',
    scope: 'audiences:read',
    handler: async ({ deps, workspace, params, query }) => {
      const contact = await deps.services.subscribers.get(workspace.id, params.id!);
      const { items, more } = await deps.services.audiences.of(
        workspace.id,
        contact.id,
        parsePage(query as Record<string, unknown>),
      );
      return cursorList(
        items.map((a) => ({ id: a.id, name: a.name, created_at: a.created_at })),
        more,
      );
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/contacts/:id/segments/:segment_id',
    summary: 'Add a contact to a segment',
    operation: 'api',
    scope: 'audiences:write',
    handler: async ({ deps, workspace, params }) => {
      const contact = await deps.services.subscribers.get(workspace.id, params.id!);
      await deps.services.audiences.addMembers(workspace.id, params.segment_id!, { subscriberIds: [contact.id] });
      return { id: params.segment_id };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/contacts/:id/segments/:segment_id',
    summary: 'Remove a contact from a segment',
    operation: 'api',
    scope: 'audiences:write',
    handler: async ({ deps, workspace, params }) => {
      const contact = await deps.services.subscribers.get(workspace.id, params.id!);
      await deps.services.audiences.removeMember(workspace.id, params.segment_id!, contact.id);
      return { id: params.segment_id, audienceId: params.segment_id, deleted: true };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/contacts/:id/topics',
    summary: "Every topic with the contact's subscription to it (its choice, or the topic's default)",
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: async ({ deps, workspace, params, query }) => {
      const contact = await deps.services.subscribers.get(workspace.id, params.id!);
      const page = parsePage(query as Record<string, unknown>);
      const all = await deps.services.topics.choicesOf(workspace.id, contact.id);
      const start = page.after === undefined ? page.offset : all.findIndex((t) => t.id === page.after) + 1;
      return cursorList(all.slice(start, start + page.limit), start + page.limit < all.length);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/contacts/:id/topics',
    summary: 'Opt a contact in to or out of topics: a list of `{id, subscription}`',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    body: z.union([z.array(topicChoice).max(100), z.object({ topics: z.array(topicChoice).max(100) })]),
    handler: async ({ deps, workspace, params, body }) => {
      const contact = await deps.services.subscribers.get(workspace.id, params.id!);
      await deps.services.topics.choose(workspace.id, contact.id, Array.isArray(body) ? body : body.topics);
      return { id: contact.id };
    },
  }),
  // Resend's earlier, audience-scoped paths (the SDK uses them when given an audienceId).
  defineRoute({
    method: 'POST',
    path: '/v1/audiences/:audience_id/contacts',
    summary: 'Create a contact in an audience (deprecated by Resend; POST /v1/contacts with segments)',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    idempotent: true,
    status: 201,
    body: createBody.omit({ segments: true, topics: true }),
    handler: (input) => createContact(input, input.body, [input.params.audience_id!]),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audiences/:audience_id/contacts/:id',
    summary: 'Read a contact of an audience, by id or email',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: async ({ deps, workspace, params }) =>
      renderContact(await memberOf(deps, workspace.id, params.audience_id!, params.id!)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/audiences/:audience_id/contacts/:id',
    summary: 'Change a contact of an audience, by id or email',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    body: updateBody,
    handler: async (input) => {
      const contact = await memberOf(input.deps, input.workspace.id, input.params.audience_id!, input.params.id!);
      return updateContact(input, contact.id, input.body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/audiences/:audience_id/contacts/:id',
    summary: 'Take a contact out of an audience (the contact itself stays)',
    operation: 'subscribers.write',
    scope: 'audiences:write',
    handler: async ({ deps, workspace, params }) => {
      const contact = await memberOf(deps, workspace.id, params.audience_id!, params.id!);
      await deps.services.audiences.removeMember(workspace.id, params.audience_id!, contact.id);
      return { object: 'contact', contact: contact.id, id: contact.id, deleted: true };
    },
  }),
];
