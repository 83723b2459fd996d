import { z } from 'zod';
import { AppError } from '../../../../shared/errors.js';
import { KEY_PERMISSIONS } from '../../../../services/credentials.js';
import { defineRoute } from '../../route.js';
import { offsetList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';

const createBody = z.object({
  name: z.string(),
  permission: z.enum(KEY_PERMISSIONS).optional(),
  domain_id: z.string().optional(),
  /** Ours: a test key (sk_test_). A test key can only create test keys. */
  test: z.boolean().optional(),
});

export const v1ApiKeyRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/api-keys',
    summary:
      'Create an API key (`permission`: full_access or sending_access, optionally from one `domain_id`); the key (`token`) is in this answer only',
    operation: 'api',
    scope: 'api_keys:write',
    status: 201,
    body: createBody,
    // Not idempotent on purpose: a replayed answer would have to keep the key, which is never stored.
    handler: async ({ deps, workspace, principal, body }) => {
      if (principal.kind === 'test' && body.test === false)
        throw new AppError('forbidden', 'A test key can create test keys only');
      const created = await deps.services.credentials.createKey({
        name: body.name,
        workspaceId: workspace.id,
        test: body.test ?? principal.kind === 'test',
        permission: body.permission,
        domain: body.domain_id,
      });
      return { object: 'api_key', ...created.credential, token: created.secret };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/api-keys',
    summary: "List the workspace's API keys (metadata only, never the key)",
    operation: 'api',
    scope: 'api_keys:read',
    paginated: true,
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query as Record<string, unknown>);
      const { items, total, more } = await deps.services.credentials.listPage(workspace.id, page);
      return offsetList('api_keys', items, total, page, more);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/api-keys/:id',
    summary: 'Rename an API key',
    operation: 'api',
    scope: 'api_keys:write',
    body: z.object({ name: z.string() }),
    handler: async ({ deps, workspace, params, body }) => ({
      object: 'api_key',
      ...(await deps.services.credentials.rename(params.id!, workspace.id, body.name)),
    }),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/api-keys/:id',
    summary: 'Revoke an API key: it stops working at once (it stays listed, as revoked)',
    operation: 'api',
    scope: 'api_keys:write',
    handler: async ({ deps, workspace, params }) => {
      const revoked = await deps.services.credentials.revoke(params.id!, workspace.id);
      return { object: 'api_key', id: revoked.id, deleted: true, revoked_at: revoked.revoked_at };
    },
  }),
];
