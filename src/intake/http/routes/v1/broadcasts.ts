import { z } from 'zod';
import type { CampaignInput, CampaignView } from '../../../../services/marketing/campaigns.js';
import { parseMailbox } from '../../../../messages/addresses.js';
import { validationError } from '../../../../shared/errors.js';
import { cursorList } from '../../pagination.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { limitWorkspace } from '../../rate-limit.js';
import { defineRoute } from '../../route.js';
import { parseScheduledAt } from '../../schedule.js';
import { abTestFields, abTestRoutes, renderAbTest, toAbInput } from './ab-tests.js';

/**
 * Resend's broadcasts: our campaigns, in Resend's shape. A broadcast is created as a draft (or
 * sent at once with `send: true`), goes to one segment (an audience), optionally to the
 * contacts in on a topic, and every message goes through the campaign path like those of
 * `POST /api/v1/campaigns/send`: one per subscribed contact, suppressions honoured,
 * one-click unsubscribe, tracking and events.
 */

const addresses = z.union([z.string(), z.array(z.string()).max(50)]);

const contentFields = {
  name: z.string().optional(),
  segment_id: z.string().optional(),
  audience_id: z.string().optional(),
  from: z.string(),
  subject: z.string(),
  reply_to: addresses.optional(),
  preview_text: z.string().optional(),
  html: z.string().optional(),
  text: z.string().optional(),
  topic_id: z.string().nullable().optional(),
  /** Ours: the content of a template instead of html. */
  template_id: z.string().optional(),
  variables: z.record(z.string(), z.unknown()).optional(),
  /** Ours: the IP pool its messages leave through (a pool's name). */
  ip_pool: z.string().max(100).optional(),
  ...abTestFields,
};

const createBody = z.object({ ...contentFields, send: z.boolean().optional(), scheduled_at: z.string().optional() });
const updateBody = z.object(contentFields).partial();

type Content = z.infer<typeof updateBody>;

/** The request's content as campaign input (only the fields given); the MCP tools share it. */
export function toInput(body: Content): Partial<CampaignInput> {
  if (body.segment_id !== undefined && body.audience_id !== undefined && body.segment_id !== body.audience_id)
    throw validationError('segment_id', 'give segment_id or audience_id, not both');
  const from = body.from === undefined ? undefined : parseMailbox('from', body.from);
  const input: Partial<CampaignInput> = {
    name: body.name,
    subject: body.subject,
    fromName: from?.name,
    fromEmail: from?.address,
    html: body.html,
    text: body.text,
    templateId: body.template_id,
    audienceId: body.segment_id ?? body.audience_id,
    topicId: body.topic_id ?? undefined,
    replyTo: body.reply_to === undefined ? undefined : Array.isArray(body.reply_to) ? body.reply_to : [body.reply_to],
    previewText: body.preview_text,
    variables: body.variables,
    ipPool: body.ip_pool,
    ...toAbInput(body),
  };
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
}

type BroadcastStatus = 'draft' | 'scheduled' | 'queued' | 'sent' | 'canceled';

const statusOf = (c: CampaignView, now: number): BroadcastStatus => {
  if (c.status === 'draft') return 'draft';
  if (c.status === 'sent') return 'sent';
  if (c.status === 'cancelled') return 'canceled';
  return c.status === 'queuing' && c.scheduled_at !== null && Date.parse(c.scheduled_at) > now ? 'scheduled' : 'queued';
};

const render = (c: CampaignView, now: number) => ({
  object: 'broadcast' as const,
  id: c.id,
  name: c.name,
  segment_id: c.audience_id,
  audience_id: c.audience_id,
  topic_id: c.topic_id,
  from: c.from,
  subject: c.subject,
  reply_to: c.reply_to,
  preview_text: c.preview_text,
  ip_pool_id: c.ip_pool_id,
  html: c.html,
  text: c.text,
  status: statusOf(c, now),
  created_at: c.created_at,
  scheduled_at: c.scheduled_at,
  sent_at: c.sent_at,
  cancelled_at: c.cancelled_at,
  recipients: c.recipients,
  ...(c.counts ? { counts: c.counts } : {}),
  ...renderAbTest(c),
});

export const v1BroadcastRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/broadcasts',
    summary: 'Create a broadcast to a segment: a draft, or sent now or at scheduled_at with `send: true`',
    operation: 'api',
    scope: 'campaigns:write',
    idempotent: true,
    status: 201,
    body: createBody,
    handler: async ({ ctx, deps, workspace, principal, body }) => {
      const input = toInput(body) as CampaignInput;
      if (input.audienceId === undefined)
        throw validationError('segment_id', 'is required: the segment the broadcast goes to');
      if (body.scheduled_at !== undefined && !body.send)
        throw validationError(
          'scheduled_at',
          'applies only with send: true (or schedule it with POST /v1/broadcasts/{id}/send)',
        );
      // Sending counts against the campaign limit; writing a draft does not.
      if (body.send) await limitWorkspace(ctx, deps, 'campaigns.send');
      const scheduledAt = parseScheduledAt(body.scheduled_at, deps.clock.now());
      const created = await deps.services.campaigns.create(workspace, input, principal.kind === 'test', {
        send: body.send ?? false,
        scheduledAt,
      });
      return render(created, deps.clock.now());
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/broadcasts',
    summary: 'List broadcasts (every campaign), newest first (cursor pagination)',
    operation: 'api',
    scope: 'campaigns:read',
    handler: async ({ deps, workspace, query }) => {
      const { items, more } = await deps.services.campaigns.list(
        workspace.id,
        parsePage(query as Record<string, unknown>),
      );
      const now = deps.clock.now();
      return cursorList(
        items.map((c) => {
          const { html: _html, text: _text, ...summary } = render(c, now);
          return summary;
        }),
        more,
      );
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/broadcasts/:id',
    summary: 'Read a broadcast with its counts (queued, delivered, bounced, opened, clicked, unsubscribed…)',
    operation: 'api',
    scope: 'campaigns:read',
    handler: async ({ deps, workspace, params }) =>
      render(await deps.services.campaigns.get(workspace.id, params.id!), deps.clock.now()),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/broadcasts/:id',
    summary: 'Change a draft broadcast',
    operation: 'api',
    scope: 'campaigns:write',
    body: updateBody,
    handler: async ({ deps, workspace, principal, params, body }) =>
      render(
        await deps.services.campaigns.update(workspace, params.id!, toInput(body), principal.kind === 'test'),
        deps.clock.now(),
      ),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/broadcasts/:id',
    summary: 'Delete a draft broadcast (a scheduled one not yet started is cancelled with it)',
    operation: 'api',
    scope: 'campaigns:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.campaigns.remove(workspace.id, params.id!);
      return { object: 'broadcast', id: removed.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/broadcasts/:id/recipients',
    summary:
      'The recipients of a broadcast with an event of one type (sent, delivered, opened, clicked, bounced, complained, unsubscribed, suppressed), oldest first',
    operation: 'api',
    scope: 'campaigns:read',
    query: z.looseObject({
      type: z
        .string()
        .optional()
        .describe('Required: sent, delivered, opened, clicked, bounced, complained, unsubscribed or suppressed'),
      email: z.string().optional().describe("Only this contact's"),
      bounce_type: z.string().optional().describe('With type=bounced: permanent, transient or undetermined'),
      limit: z.string().optional(),
      after: z.string().optional(),
      before: z.string().optional(),
    }),
    handler: ({ deps, workspace, params, query }) =>
      deps.services.campaignEngagement.recipients(workspace.id, params.id!, query as Record<string, unknown>),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/broadcasts/:id/clicked-links',
    summary: "The links of a broadcast's messages that were clicked: clicks and distinct messages per URL",
    operation: 'api',
    scope: 'campaigns:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: ({ deps, workspace, params, query }) =>
      deps.services.campaignEngagement.clickedLinks(workspace.id, params.id!, query as Record<string, unknown>),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/broadcasts/:id/send',
    summary: 'Send a draft broadcast now, or at scheduled_at (ISO 8601 or "in 2 hours")',
    operation: 'api',
    scope: 'campaigns:write',
    idempotent: true,
    body: z.object({ scheduled_at: z.string().nullable().optional() }),
    handler: async ({ ctx, deps, workspace, principal, params, body }) => {
      await limitWorkspace(ctx, deps, 'campaigns.send');
      const sent = await deps.services.campaigns.send(
        workspace,
        params.id!,
        parseScheduledAt(body.scheduled_at, deps.clock.now()),
        principal.kind === 'test',
      );
      return render(sent, deps.clock.now());
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/broadcasts/:id/cancel',
    summary:
      'Cancel a broadcast: a scheduled one goes back to draft; one being sent stops (messages not yet handed to delivery are cancelled)',
    operation: 'api',
    scope: 'campaigns:write',
    handler: async ({ deps, workspace, params }) =>
      render(await deps.services.campaigns.cancel(workspace.id, params.id!), deps.clock.now()),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/broadcasts/:id/duplicate',
    summary: 'Copy a broadcast into a new draft',
    operation: 'api',
    scope: 'campaigns:write',
    status: 201,
    handler: async ({ deps, workspace, params }) =>
      render(await deps.services.campaigns.duplicate(workspace, params.id!), deps.clock.now()),
  }),
  ...abTestRoutes('broadcasts', render),
];

/** What a broadcast will do before it does it: whom it reaches, what they get. */
export const v1BroadcastPreviewRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/broadcasts/:id/reach',
    summary:
      'How many recipients sending the broadcast now would reach (subscribed members of its segment and topic, suppressed addresses not counted)',
    operation: 'api',
    scope: 'campaigns:read',
    handler: async ({ deps, workspace, params }) => ({
      object: 'broadcast_reach',
      id: params.id!,
      recipients: await deps.services.campaigns.reach(workspace.id, params.id!),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/broadcasts/:id/preview',
    summary:
      "The broadcast's subject, HTML and text as one contact would get them (a sample contact, or the fields given), variables filled",
    operation: 'api',
    scope: 'campaigns:read',
    body: z.object({
      contact: z
        .object({
          email: z.string().optional(),
          first_name: z.string().optional(),
          last_name: z.string().optional(),
          properties: z.record(z.string(), z.unknown()).optional(),
        })
        .optional(),
    }),
    handler: ({ deps, workspace, params, body }) =>
      deps.services.campaigns.preview(workspace.id, params.id!, body.contact),
  }),
];
