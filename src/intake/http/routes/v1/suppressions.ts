import { z } from 'zod';
import {
  SUPPRESSION_REASONS,
  SUPPRESSION_SCOPES,
  type SuppressionReason,
  type SuppressionView,
} from '../../../../services/suppressions.js';
import { validationError } from '../../../../shared/errors.js';
import { offsetList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute } from '../../route.js';

const addSuppressionBody = z.object({
  email: z.string().max(320).optional(),
  domain: z.string().max(253).optional(),
  reason: z.enum(SUPPRESSION_REASONS).optional(),
  scope: z.enum(SUPPRESSION_SCOPES).optional(),
  detail: z.string().max(1000).optional(),
});

/** Resend's three origins, and the reasons each stands for. */
const ORIGINS = {
  bounce: ['hard_bounce'],
  complaint: ['complaint'],
  manual: ['manual', 'unsubscribe'],
} as const satisfies Record<string, readonly SuppressionReason[]>;
type Origin = keyof typeof ORIGINS;
const originOf = (reason: SuppressionReason): Origin =>
  reason === 'hard_bounce' ? 'bounce' : reason === 'complaint' ? 'complaint' : 'manual';

/** The entry with Resend's fields beside ours: the address is its id. */
const render = (s: SuppressionView) => ({
  object: 'suppression' as const,
  id: s.email,
  ...s,
  origin: originOf(s.reason),
  source_id: s.email_id,
});

const batchBody = z.object({
  emails: z.array(z.string().max(320)).optional(),
  ids: z.array(z.string().max(320)).optional(),
});

export const v1SuppressionRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/suppressions',
    summary:
      'List suppressed addresses and domains, newest first (offset or cursor pagination; `origin`: bounce, complaint or manual)',
    operation: 'api',
    scope: 'suppressions:read',
    paginated: true,
    query: z.looseObject({ origin: z.enum(['bounce', 'complaint', 'manual']).optional() }),
    handler: async ({ deps, workspace, query }) => {
      const page = parsePage(query);
      const { items, total, more } = await deps.services.suppressions.list(
        workspace.id,
        page,
        query.origin ? ORIGINS[query.origin] : undefined,
      );
      return offsetList('suppressions', items.map(render), total, page, more);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/suppressions',
    summary: 'Suppress an address (email) or a whole domain (domain), with a reason',
    operation: 'api',
    scope: 'suppressions:write',
    body: addSuppressionBody,
    status: 201,
    handler: async ({ deps, workspace, body }) => render(await deps.services.suppressions.add(workspace.id, body)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/suppressions/batch/add',
    summary: 'Suppress many addresses at once (`emails`): all valid, or none is added',
    operation: 'api',
    scope: 'suppressions:write',
    body: batchBody,
    handler: async ({ deps, workspace, body }) => {
      if (!body.emails) throw validationError('emails', 'is required');
      const added = await deps.services.suppressions.addMany(workspace.id, body.emails);
      return { data: added.map((s) => ({ object: 'suppression', id: s.email })) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/suppressions/batch/remove',
    summary: 'Remove many addresses from the list at once (`emails`, or `ids`: the same addresses)',
    operation: 'api',
    scope: 'suppressions:write',
    body: batchBody,
    handler: async ({ deps, workspace, body }) => {
      if ((body.emails === undefined) === (body.ids === undefined))
        throw validationError('emails', 'give either emails or ids');
      const removed = await deps.services.suppressions.removeMany(workspace.id, (body.emails ?? body.ids)!);
      return { data: removed.map((r) => ({ object: 'suppression', id: r.email, deleted: r.deleted })) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/suppressions/:email',
    summary: 'Whether an address (or @domain) is suppressed, and why',
    operation: 'api',
    scope: 'suppressions:read',
    handler: async ({ deps, workspace, params }) =>
      render(await deps.services.suppressions.get(workspace.id, params.email!)),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/suppressions/:email',
    summary: 'Remove an address (or @domain) from the suppression list',
    operation: 'api',
    scope: 'suppressions:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.suppressions.remove(workspace.id, params.email!);
      return { object: 'suppression', id: removed.email, email: removed.email, deleted: true };
    },
  }),
];
