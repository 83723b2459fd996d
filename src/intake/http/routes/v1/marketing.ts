import { z } from 'zod';
import type { CampaignInput } from '../../../../services/marketing/campaigns.js';
import { offsetList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute } from '../../route.js';
import { abTestFields, abTestRoutes, toAbInput } from './ab-tests.js';

const metadata = z.record(z.string(), z.unknown());

export const subscriberBody = z.object({
  email: z.string(),
  first_name: z.string().nullable().optional(),
  last_name: z.string().nullable().optional(),
  tags: z.array(z.string()).optional(),
  domain_id: z.string().nullable().optional(),
  external_id: z.string().nullable().optional(),
  metadata: metadata.nullable().optional(),
});

export const campaignBody = z.object({
  subject: z.string(),
  from_name: z.string(),
  from_email: z.string(),
  html: z.string().optional(),
  templateId: z.string().optional(),
  template_id: z.string().optional(),
  name: z.string().optional(),
  tags: z.array(z.string()).max(100).optional(),
  audience_id: z.string().optional(),
  variables: z.record(z.string(), z.unknown()).optional(),
  external_id: z.string().optional(),
  metadata: metadata.optional(),
  ...abTestFields,
});

export const toCampaignInput = (body: z.infer<typeof campaignBody>): CampaignInput => ({
  name: body.name,
  subject: body.subject,
  fromName: body.from_name,
  fromEmail: body.from_email,
  html: body.html,
  templateId: body.templateId ?? body.template_id,
  tags: body.tags,
  audienceId: body.audience_id,
  variables: body.variables,
  externalId: body.external_id,
  metadata: body.metadata,
  ...toAbInput(body),
});

const subscriberQuery = z
  .object({
    status: z.enum(['subscribed', 'unsubscribed']).optional(),
    tag: z.string().optional(),
    external_id: z.string().optional(),
    email: z.string().optional(),
  })
  .passthrough();

const page = (query: unknown) => parsePage(query as Record<string, unknown>);

export const v1MarketingRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/subscribers',
    summary: 'Create or update a subscriber (upsert by email)',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    idempotent: true,
    status: 201,
    body: subscriberBody,
    handler: async ({ deps, workspace, body }) =>
      (await deps.services.subscribers.upsert(workspace.id, body)).subscriber,
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/subscribers',
    summary: 'List subscribers (offset pagination; filters status, tag, external_id, email)',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    paginated: true,
    query: subscriberQuery,
    handler: async ({ deps, workspace, query }) => {
      const p = page(query);
      const { items, total, more } = await deps.services.subscribers.list(
        {
          workspaceId: workspace.id,
          status: query.status,
          tag: query.tag,
          externalId: query.external_id,
          email: query.email,
        },
        p,
      );
      return offsetList('subscribers', items, total, p, more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/subscribers/:id',
    summary: 'Read one subscriber',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    handler: ({ deps, workspace, params }) => deps.services.subscribers.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/subscribers/:id',
    summary: 'Change a subscriber; `status: "unsubscribed"` opts it out, `"subscribed"` opts it back in',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    body: subscriberBody.partial().extend({ status: z.enum(['subscribed', 'unsubscribed']).optional() }),
    handler: ({ deps, workspace, params, body }) => deps.services.subscribers.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/subscribers/:id',
    summary: 'Delete a subscriber (suppressions stay)',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    handler: async ({ deps, workspace, params }) => {
      await deps.services.subscribers.remove(workspace.id, params.id!);
      return { id: params.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/audiences',
    summary: 'Create an audience (a named group of subscribers)',
    operation: 'api',
    scope: 'audiences:write',
    idempotent: true,
    status: 201,
    body: z.object({ name: z.string() }),
    handler: ({ deps, workspace, body }) => deps.services.audiences.create(workspace.id, body.name),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audiences',
    summary: 'List audiences with their member counts',
    operation: 'api',
    scope: 'audiences:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const p = page(query);
      const { items, total, more } = await deps.services.audiences.list(workspace.id, p);
      return offsetList('audiences', items, total, p, more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audiences/:id',
    summary: 'Read one audience',
    operation: 'api',
    scope: 'audiences:read',
    handler: ({ deps, workspace, params }) => deps.services.audiences.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/audiences/:id',
    summary: 'Delete an audience (its subscribers stay)',
    operation: 'api',
    scope: 'audiences:write',
    handler: async ({ deps, workspace, params }) => {
      await deps.services.audiences.remove(workspace.id, params.id!);
      return { id: params.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audiences/:id/members',
    summary: "List an audience's subscribers",
    operation: 'api',
    scope: 'audiences:read',
    paginated: true,
    handler: async ({ deps, workspace, params, query }) => {
      const p = page(query);
      const { items, total, more } = await deps.services.audiences.members(workspace.id, params.id!, p);
      return offsetList('subscribers', items, total, p, more);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/audiences/:id/members',
    summary: 'Add subscribers to an audience by id or by email',
    operation: 'api',
    scope: 'audiences:write',
    body: z.object({ subscriber_ids: z.array(z.string()).optional(), emails: z.array(z.string()).optional() }),
    handler: ({ deps, workspace, params, body }) =>
      deps.services.audiences.addMembers(workspace.id, params.id!, {
        subscriberIds: body.subscriber_ids,
        emails: body.emails,
      }),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/audiences/:id/members/:subscriberId',
    summary: 'Remove a subscriber from an audience',
    operation: 'api',
    scope: 'audiences:write',
    handler: async ({ deps, workspace, params }) => {
      await deps.services.audiences.removeMember(workspace.id, params.id!, params.subscriberId!);
      return { audience_id: params.id, subscriber_id: params.subscriberId, removed: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/campaigns',
    summary: 'Queue a campaign (the legacy body; also `audience_id`)',
    operation: 'campaigns.send',
    scope: 'campaigns:write',
    idempotent: true,
    status: 202,
    body: campaignBody,
    handler: ({ deps, workspace, principal, body }) =>
      deps.services.campaigns.create(workspace, toCampaignInput(body), principal.kind === 'test'),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/campaigns',
    summary: 'List campaigns',
    operation: 'api',
    scope: 'campaigns:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const p = page(query);
      const { items, total, more } = await deps.services.campaigns.list(workspace.id, p);
      return offsetList('campaigns', items, total, p, more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/campaigns/:id',
    summary: 'Read one campaign with its counts',
    operation: 'api',
    scope: 'campaigns:read',
    handler: ({ deps, workspace, params }) => deps.services.campaigns.get(workspace.id, params.id!),
  }),
  ...abTestRoutes('campaigns', (c) => c),
];
