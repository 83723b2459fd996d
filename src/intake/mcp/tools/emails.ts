import { z } from 'zod';
import { toSendInput } from '../../http/routes/v1/emails.js';
import { READ, SEND, defineTool } from '../tool.js';

const addresses = z.union([z.string(), z.array(z.string()).max(50)]);

const sendInput = z.object({
  from: z
    .string()
    .optional()
    .describe(
      '"Name <address@your-domain>"; a verified domain of the workspace (optional with a template that names one)',
    ),
  to: addresses.describe('Recipients, at most 50'),
  subject: z.string().optional(),
  html: z.string().optional(),
  text: z.string().optional(),
  cc: addresses.optional(),
  bcc: addresses.optional(),
  reply_to: addresses.optional(),
  template_id: z.string().optional().describe('A template (id or alias): its published version is sent'),
  variables: z.record(z.string(), z.unknown()).optional().describe("Values of the template's {{variables}}"),
  scheduled_at: z.string().optional().describe('ISO 8601 date and time, or "in 10 minutes"'),
  tags: z
    .array(z.object({ name: z.string(), value: z.string().optional() }))
    .max(50)
    .optional(),
  type: z.enum(['transactional', 'marketing']).optional(),
});

export const emailTools = [
  defineTool({
    name: 'emails_send',
    title: 'Send an email',
    description:
      "Queues one message to real people (a test key only simulates delivery). Counts against the workspace's sending rate and plan; give `idempotency_key` so that a retry does not send twice. Returns the email id and status.",
    family: 'emails',
    scope: 'emails:send',
    operation: null,
    rest: 'POST /v1/emails',
    annotations: SEND,
    idempotent: true,
    input: sendInput,
    handler: async ({ deps, caller, args }) => {
      // The key's kind and domain hold as on /v1: a test key's mail is simulated, a domain key sends from its domain only.
      const sender = {
        test: caller.principal.kind === 'test',
        senderDomainId: caller.principal.domainId,
        now: deps.clock.now(),
      };
      const outcome = await deps.services.send.send(caller.workspace, toSendInput(args, args.to, sender));
      const sent = outcome.results[0]!;
      return { id: sent.id, status: sent.status };
    },
  }),
  defineTool({
    name: 'emails_get',
    title: 'Read an email',
    description:
      'Reads one email: its status, recipients and delivery attempts, with its events (sent, delivered, opened, bounced …) oldest first. Reads only.',
    family: 'emails',
    scope: 'emails:read',
    operation: 'api',
    rest: 'GET /v1/emails/:id',
    annotations: READ,
    input: z.object({ id: z.string().describe('The email id') }),
    handler: async ({ deps, caller, args }) => {
      const [email, events] = await Promise.all([
        deps.services.emails.get(caller.workspace.id, args.id),
        deps.services.emails.events(caller.workspace.id, args.id),
      ]);
      return { ...email, events };
    },
  }),
  defineTool({
    name: 'emails_list',
    title: 'List emails',
    description:
      'Lists emails newest first (`after`: the next page), filtered by status, recipient, search text or tag. Reads only.',
    family: 'emails',
    scope: 'emails:read',
    operation: 'api',
    rest: 'GET /v1/emails',
    annotations: READ,
    input: z.object({
      limit: z.number().int().min(1).max(100).optional(),
      after: z.string().optional().describe('next_cursor of the previous page'),
      status: z
        .string()
        .optional()
        .describe('queued, scheduled, sending, delivered, deferred, bounced, failed, cancelled, suppressed, held'),
      to: z.string().optional().describe('Part of a recipient address'),
      q: z.string().optional().describe('Part of the subject, From or To'),
      tag: z.string().optional(),
    }),
    handler: ({ deps, caller, args }) =>
      deps.services.emails.list(caller.workspace.id, {
        ...args,
        limit: args.limit === undefined ? undefined : String(args.limit),
      }),
  }),
];
