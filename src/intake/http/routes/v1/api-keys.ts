import { defineRoute } from '../../route.js';
import { offsetList, parsePage } from '../../pagination.js';

export const v1ApiKeyRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/api-keys',
    summary: "List the workspace's API keys (metadata only, never the key)",
    operation: 'api',
    scope: 'api_keys:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const filter = { workspaceId: workspace.id, oauth: false };
      const [items, total] = await Promise.all([
        deps.services.credentials.list({ ...filter, ...page }),
        deps.services.credentials.count(filter),
      ]);
      return offsetList('api_keys', items, total, page);
    },
  }),
];
