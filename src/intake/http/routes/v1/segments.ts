import { z } from 'zod';
import type { AudienceView } from '../../../../services/marketing/audiences.js';
import { cursorList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute } from '../../route.js';
import { renderContact } from './contacts.js';

/** Resend's segments: our audiences, in Resend's shape (the SPEC's /v1/audiences are the same records). */
const render = (a: AudienceView) => ({
  object: 'segment' as const,
  id: a.id,
  name: a.name,
  created_at: a.created_at,
  member_count: a.member_count,
  conditions: a.conditions,
});

/** Ours: conditions on declared contact properties; every contact meeting all of them is a member (services/marketing/segment-conditions.ts). */
const conditions = z.array(z.unknown()).nullable().optional();

export const v1SegmentRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/segments',
    summary: 'Create a segment (an audience), optionally with conditions on contact properties',
    operation: 'api',
    scope: 'audiences:write',
    idempotent: true,
    status: 201,
    body: z.object({ name: z.string(), conditions }),
    handler: async ({ deps, workspace, body }) =>
      render(await deps.services.audiences.create(workspace.id, body.name, body.conditions ?? undefined)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/segments',
    summary: 'List segments, newest first (cursor pagination)',
    operation: 'api',
    scope: 'audiences:read',
    handler: async ({ deps, workspace, query }) => {
      const { items, more } = await deps.services.audiences.list(
        workspace.id,
        parsePage(query as Record<string, unknown>),
      );
      return cursorList(items.map(render), more);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/segments/:id',
    summary: 'Read one segment',
    operation: 'api',
    scope: 'audiences:read',
    handler: async ({ deps, workspace, params }) => render(await deps.services.audiences.get(workspace.id, params.id!)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/segments/:id',
    summary: 'Rename a segment, or set its conditions on contact properties (null or [] removes them)',
    operation: 'api',
    scope: 'audiences:write',
    body: z.object({ name: z.string().optional(), conditions }),
    handler: async ({ deps, workspace, params, body }) => {
      let segment = await deps.services.audiences.get(workspace.id, params.id!);
      if (body.conditions !== undefined)
        segment = await deps.services.audiences.setConditions(workspace.id, segment.id, body.conditions);
      if (body.name !== undefined) segment = await deps.services.audiences.rename(workspace.id, segment.id, body.name);
      return render(segment);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/segments/:id',
    summary: 'Delete a segment (its contacts stay)',
    operation: 'api',
    scope: 'audiences:write',
    handler: async ({ deps, workspace, params }) => {
      const segment = await deps.services.audiences.get(workspace.id, params.id!);
      await deps.services.audiences.remove(workspace.id, segment.id);
      return { object: 'segment', id: segment.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/segments/:id/contacts',
    summary: "A segment's contacts, newest first (cursor pagination)",
    operation: 'subscribers.read',
    scope: 'audiences:read',
    handler: async ({ deps, workspace, params, query }) => {
      const { items, more } = await deps.services.audiences.members(
        workspace.id,
        params.id!,
        parsePage(query as Record<string, unknown>),
      );
      return cursorList(items.map(renderContact), more);
    },
  }),
];
