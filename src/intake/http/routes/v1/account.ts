import { z } from 'zod';
import { parsePage } from '../../../../store/infra/list-page.js';
import { cursorList } from '../../pagination.js';
import { defineRoute } from '../../route.js';

/** The workspace's own account: usage against its limits, its API request logs, and the OAuth grants (access tokens) that reach it. */
export const v1AccountRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/usage',
    summary:
      'What the workspace used today and this month (UTC) against its limits: emails sent and received, contacts, segments, broadcasts, automation runs, domains, the sending rate',
    operation: 'api',
    scope: 'emails:read',
    handler: ({ deps, workspace }) => deps.services.usage.get(workspace),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/logs',
    summary:
      "The workspace's API requests, newest first (limit, after, before): method, endpoint, status, user agent; kept retention.days",
    operation: 'api',
    scope: 'api_keys:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: ({ deps, workspace, query }) => deps.services.apiLogs.list(workspace.id, query as Record<string, unknown>),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audit-log',
    summary:
      'Who changed what in the workspace, newest first (limit, after, before; action, actor_type, actor_id, object_type, object_id, since, until): keys, domains, webhooks, suppressions, broadcasts sent, settings; a master key also sees instance-wide changes (IP pools). Full-access keys only; never a secret',
    operation: 'api',
    scope: 'full_access',
    query: z.looseObject({
      limit: z.string().optional(),
      after: z.string().optional(),
      before: z.string().optional(),
      action: z.string().optional(),
      actor_type: z.string().optional(),
      actor_id: z.string().optional(),
      object_type: z.string().optional(),
      object_id: z.string().optional(),
      since: z.string().optional(),
      until: z.string().optional(),
    }),
    handler: ({ deps, workspace, principal, query }) =>
      deps.services.audit.list(
        { workspaceId: workspace.id, instance: principal.master },
        query as Record<string, unknown>,
      ),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/logs/:id',
    summary: 'One API request with its request and response bodies (secrets and attachment content redacted)',
    operation: 'api',
    scope: 'api_keys:read',
    handler: ({ deps, workspace, params }) => deps.services.apiLogs.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/oauth/grants',
    summary:
      "The workspace's OAuth grants (an app a person authorized, or a token minted by `mailsvc tokens create`), revoked ones too, newest first (limit, after, before)",
    operation: 'api',
    scope: 'api_keys:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: async ({ deps, workspace, query }) => {
      const { items, more } = await deps.services.oauth.listGrants(
        { workspaceId: workspace.id },
        parsePage(query, 'keyset'),
      );
      return cursorList(items, more);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/oauth/grants/:id',
    summary: 'Revoke an OAuth grant: its access tokens are refused (401) and its refresh tokens end',
    operation: 'api',
    scope: 'api_keys:write',
    handler: async ({ deps, workspace, params }) => {
      const revoked = await deps.services.oauth.revokeGrant(workspace.id, params.id!);
      return {
        object: 'oauth_grant',
        id: revoked.id,
        revoked_at: revoked.revoked_at!,
        revoked_reason: revoked.revoked_reason!,
      };
    },
  }),
];
