import { z } from 'zod';
import type { CredentialView } from '../../../../services/credentials.js';
import { parsePage } from '../../../../store/list-page.js';
import { cursorList } from '../../pagination.js';
import { defineRoute } from '../../route.js';

/**
 * Resend's OAuth grant: one of the workspace's OAuth access tokens (`oat_`), which are minted
 * by the operator (`mailsvc tokens create`), not by an OAuth client's consent; the token's
 * name stands for the client.
 */
const grantView = (t: CredentialView) => ({
  object: 'oauth_grant' as const,
  id: t.id,
  client_id: t.prefix,
  scopes: t.scopes ?? [],
  created_at: t.created_at,
  expires_at: t.expires_at,
  last_used_at: t.last_used_at,
  revoked_at: t.revoked_at,
  revoked_reason: t.revoked_at === null ? null : 'revoked',
  client: { name: t.name, logo_uri: null },
});

/** The workspace's own account: usage against its limits, its API request logs, and the OAuth grants (access tokens) that reach it. */
export const v1AccountRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/usage',
    summary: "What the workspace used today and this month (UTC) against its limits: emails sent and received, contacts, segments, broadcasts, automation runs, domains, the sending rate",
    operation: 'api',
    scope: 'emails:read',
    handler: ({ deps, workspace }) => deps.services.usage.get(workspace),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/logs',
    summary: "The workspace's API requests, newest first (limit, after, before): method, endpoint, status, user agent; kept retention.days",
    operation: 'api',
    scope: 'api_keys:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: ({ deps, workspace, query }) => deps.services.apiLogs.list(workspace.id, query as Record<string, unknown>),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/audit-log',
    summary:
      "Who changed what in the workspace, newest first (limit, after, before; action, actor_type, actor_id, object_type, object_id, since, until): keys, domains, webhooks, suppressions, broadcasts sent, settings; a master key also sees instance-wide changes (IP pools). Full-access keys only; never a secret",
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
    handler: ({ deps, workspace, principal, query }) => deps.services.audit.list({ workspaceId: workspace.id, instance: principal.master }, query as Record<string, unknown>),
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
    summary: "The workspace's OAuth access tokens as Resend's OAuth grants, revoked ones too, newest first (limit, after, before)",
    operation: 'api',
    scope: 'api_keys:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: async ({ deps, workspace, query }) => {
      const { items, more } = await deps.services.credentials.listTokens(workspace.id, parsePage(query, 'keyset'));
      return cursorList(items.map(grantView), more);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/oauth/grants/:id',
    summary: 'Revoke an OAuth access token: it is refused (401) from then on',
    operation: 'api',
    scope: 'api_keys:write',
    handler: async ({ deps, workspace, params }) => {
      const revoked = grantView(await deps.services.credentials.revokeToken(workspace.id, params.id!));
      return { object: 'oauth_grant', id: revoked.id, revoked_at: revoked.revoked_at!, revoked_reason: revoked.revoked_reason! };
    },
  }),
];
