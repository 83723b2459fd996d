import { z } from 'zod';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute } from '../../route.js';
import { campaignBody, subscriberBody, toCampaignInput } from '../v1/marketing.js';

export const legacyMarketingRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v1/subscribers',
    summary: 'Create or update a subscriber (upsert by email)',
    operation: 'subscribers.write',
    scope: 'subscribers:write',
    status: 201,
    body: subscriberBody,
    handler: async ({ deps, workspace, body }) => {
      const { subscriber } = await deps.services.subscribers.upsert(workspace.id, body);
      return {
        success: true,
        subscriber: {
          id: subscriber.id,
          email: subscriber.email,
          status: subscriber.status,
          created_at: subscriber.created_at,
          source: subscriber.source,
        },
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/v1/subscribers',
    summary: 'List subscribers (limit, offset, external_id)',
    operation: 'subscribers.read',
    scope: 'subscribers:read',
    paginated: true,
    query: z.object({ external_id: z.string().optional() }).passthrough(),
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query);
      const { items, total } = await deps.services.subscribers.list(
        { workspaceId: workspace.id, externalId: query.external_id },
        page,
      );
      return { success: true, subscribers: items, total, limit: page.limit, offset: page.offset };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/v1/campaigns/send',
    summary: 'Queue a campaign to all subscribed subscribers, or those with any of `tags`',
    operation: 'campaigns.send',
    scope: 'campaigns:write',
    status: 202,
    body: campaignBody,
    handler: async ({ deps, workspace, principal, body }) => {
      const campaign = await deps.services.campaigns.create(
        workspace,
        toCampaignInput(body),
        principal.kind === 'test',
      );
      const n = campaign.recipients;
      return {
        success: true,
        message: `Campaign queued: ${n} subscriber${n === 1 ? '' : 's'} will receive it`,
        campaignId: campaign.id,
      };
    },
  }),
];
