import { z } from 'zod';
import type { CampaignInput } from '../../../services/marketing/campaigns.js';
import { validationError } from '../../../shared/errors.js';
import { toInput } from '../../http/routes/v1/broadcasts.js';
import { countAgainstLimit } from '../../http/rate-limit.js';
import { parseScheduledAt } from '../../http/schedule.js';
import { CREATE, READ, SEND, defineTool } from '../tool.js';

export const broadcastTools = [
  defineTool({
    name: 'broadcasts_create',
    title: 'Draft a broadcast',
    description:
      "Creates a broadcast to a segment as a draft (HTML, or a template's content copied in). Nothing is sent: broadcasts_send does that after confirmation. Writes rows.",
    family: 'broadcasts',
    scope: 'campaigns:write',
    operation: 'api',
    rest: 'POST /v1/broadcasts',
    annotations: CREATE,
    idempotent: true,
    input: z.object({
      name: z.string().optional(),
      segment_id: z.string().describe('The segment it goes to'),
      topic_id: z.string().optional().describe('Only the contacts in on this topic'),
      from: z.string().describe('"Name <address@your-domain>"'),
      subject: z.string(),
      preview_text: z.string().optional(),
      html: z.string().optional().describe('Give html or template_id'),
      text: z.string().optional(),
      template_id: z.string().optional().describe('A template (id or alias) whose published content is copied in'),
      variables: z.record(z.string(), z.unknown()).optional(),
    }),
    handler: ({ deps, caller, args }) =>
      deps.services.campaigns.create(
        caller.workspace,
        toInput(args) as CampaignInput,
        caller.principal.kind === 'test',
        { send: false, scheduledAt: null },
      ),
  }),
  defineTool({
    name: 'broadcasts_preview',
    title: 'Preview a broadcast',
    description:
      'Shows a broadcast as one contact would get it (a sample contact, or the fields given: subject, HTML and text with variables filled) and how many recipients sending it now would reach. Reads only.',
    family: 'broadcasts',
    scope: 'campaigns:read',
    operation: 'api',
    rest: 'POST /v1/broadcasts/:id/preview',
    annotations: READ,
    input: z.object({
      id: z.string(),
      contact: z
        .object({
          email: z.string().optional(),
          first_name: z.string().optional(),
          last_name: z.string().optional(),
          properties: z.record(z.string(), z.unknown()).optional(),
        })
        .optional(),
    }),
    handler: async ({ deps, caller, args }) => {
      const [preview, recipients] = await Promise.all([
        deps.services.campaigns.preview(caller.workspace.id, args.id, args.contact),
        deps.services.campaigns.reach(caller.workspace.id, args.id),
      ]);
      return { ...preview, recipients };
    },
  }),
  defineTool({
    name: 'broadcasts_send',
    title: 'Send or schedule a broadcast',
    description:
      'Sends a draft broadcast to its segment, now or at `scheduled_at`. Without `confirm: true` it sends nothing and answers how many recipients it would reach: show that to the person and ask before calling again with `confirm: true`. Sending mails every subscribed contact of the segment (a test key simulates it) and counts against the broadcast rate limit.',
    family: 'broadcasts',
    scope: 'campaigns:write',
    operation: 'api',
    rest: 'POST /v1/broadcasts/:id/send',
    annotations: SEND,
    idempotent: true,
    input: z.object({
      id: z.string(),
      scheduled_at: z.string().optional().describe('ISO 8601, or "in 2 hours"; absent: now'),
      confirm: z.boolean().optional().describe('true once the person agreed to the recipient count'),
    }),
    handler: async ({ deps, caller, args }) => {
      const { workspace, principal } = caller;
      const scheduledAt = parseScheduledAt(args.scheduled_at, deps.clock.now());
      if (args.confirm !== true) {
        const broadcast = await deps.services.campaigns.get(workspace.id, args.id);
        if (broadcast.status !== 'draft')
          throw validationError('id', `the broadcast is ${broadcast.status}, not a draft`);
        const recipients = await deps.services.campaigns.reach(workspace.id, args.id);
        return {
          sent: false,
          confirmation_required: true,
          recipients,
          message: `Sending would mail ${recipients} recipient${recipients === 1 ? '' : 's'}${scheduledAt === null ? ' now' : ` at ${new Date(scheduledAt).toISOString()}`}. Nothing was sent: call again with confirm: true once the person agrees.`,
        };
      }
      // As POST /v1/broadcasts/{id}/send: sending counts against the broadcast limit; asking does not.
      await countAgainstLimit(deps, 'campaigns.send', `ws:${workspace.id}`, workspace);
      const sent = await deps.services.campaigns.send(workspace, args.id, scheduledAt, principal.kind === 'test');
      return {
        sent: true,
        id: sent.id,
        status: sent.status,
        recipients: sent.recipients,
        scheduled_at: sent.scheduled_at,
      };
    },
  }),
];
