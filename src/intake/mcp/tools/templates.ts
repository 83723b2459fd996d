import { z } from 'zod';
import { parsePage } from '../../../store/infra/list-page.js';
import { toSendInput } from '../../http/routes/v1/emails.js';
import { CREATE, READ, SEND, WRITE, defineTool } from '../tool.js';

const idOrAlias = z.string().min(1).max(200).describe('The template id, or its alias');

const variable = z.object({
  key: z.string().describe('The name used as {{key}} in the subject, HTML and text'),
  type: z.enum(['string', 'number']),
  fallback_value: z.union([z.string(), z.number()]).nullable().optional().describe('Used when a send gives no value'),
  sample_value: z.union([z.string(), z.number()]).nullable().optional().describe('Filled in by previews; never sent'),
});

const fields = {
  name: z.string().describe('A name for people'),
  subject: z.string().nullable().optional(),
  html: z.string().optional().describe('The HTML body; {{variables}} are filled at send time. Give html or mjml'),
  mjml: z
    .string()
    .optional()
    .describe('The body in MJML (<mjml><mj-body>…), compiled to HTML under strict validation; errors name their lines'),
  inline_css: z
    .boolean()
    .optional()
    .describe('With html: move <style> CSS into style attributes, for clients that drop <style>'),
  text: z.string().nullable().optional().describe('The plain-text part (derived from the HTML when absent)'),
  alias: z.string().nullable().optional().describe('Another name to send or read it by'),
  from: z.string().nullable().optional().describe('The default sender of mail using it'),
  reply_to: z
    .union([z.string(), z.array(z.string()).max(50)])
    .nullable()
    .optional(),
  variables: z.array(variable).max(50).nullable().optional(),
};

export const templateTools = [
  defineTool({
    name: 'templates_list',
    title: 'List templates',
    description: "Lists the workspace's templates, newest first (20 a page; `offset` for the next). Reads only.",
    family: 'templates',
    scope: 'templates:read',
    operation: 'api',
    rest: 'GET /v1/templates',
    annotations: READ,
    input: z.object({ limit: z.number().int().min(1).max(100).optional(), offset: z.number().int().min(0).optional() }),
    handler: async ({ deps, caller, args }) => {
      const page = parsePage(args);
      const { items, total, more } = await deps.services.templates.list(caller.workspace.id, page);
      return { templates: items, total, has_more: more };
    },
  }),
  defineTool({
    name: 'templates_get',
    title: 'Read a template',
    description:
      'Reads one template (by id or alias): its subject, HTML, text, declared variables and whether it is published. Reads only.',
    family: 'templates',
    scope: 'templates:read',
    operation: 'api',
    rest: 'GET /v1/templates/:id',
    annotations: READ,
    input: z.object({ id: idOrAlias }),
    handler: ({ deps, caller, args }) => deps.services.templates.get(caller.workspace.id, args.id),
  }),
  defineTool({
    name: 'templates_create',
    title: 'Create a template',
    description:
      'Creates a template as a draft from HTML or MJML (MJML is the better choice: it compiles to HTML that Outlook and Gmail render). Nothing is sent; sends use it once published. Writes one row.',
    family: 'templates',
    scope: 'templates:write',
    operation: 'api',
    rest: 'POST /v1/templates',
    annotations: CREATE,
    idempotent: true,
    input: z.object(fields),
    handler: ({ deps, caller, args }) => deps.services.templates.create(caller.workspace.id, args),
  }),
  defineTool({
    name: 'templates_update',
    title: 'Change a template',
    description:
      'Changes the fields given (by id or alias). A published template keeps sending its published version until it is published again. Writes one row.',
    family: 'templates',
    scope: 'templates:write',
    operation: 'api',
    rest: 'PATCH /v1/templates/:id',
    annotations: WRITE,
    input: z.object({ id: idOrAlias, ...z.object(fields).partial().shape }),
    handler: ({ deps, caller, args }) => {
      const { id, ...changes } = args;
      return deps.services.templates.update(caller.workspace.id, id, changes);
    },
  }),
  defineTool({
    name: 'templates_publish',
    title: 'Publish a template',
    description:
      "Makes the template's current content the version that sends use. Sends already made keep what they used. Writes one row.",
    family: 'templates',
    scope: 'templates:write',
    operation: 'api',
    rest: 'POST /v1/templates/:id/publish',
    annotations: WRITE,
    input: z.object({ id: idOrAlias }),
    handler: ({ deps, caller, args }) => deps.services.templates.publish(caller.workspace.id, args.id),
  }),
  defineTool({
    name: 'templates_preview',
    title: 'Preview a template',
    description:
      "Renders a template (the draft, or a published `version`) with variables: given values, else each variable's sample, else its fallback. Returns subject, HTML and text, and names variables that are missing or unknown. Reads only.",
    family: 'templates',
    scope: 'templates:read',
    operation: 'api',
    rest: 'POST /v1/templates/:id/preview',
    annotations: READ,
    input: z.object({
      id: idOrAlias,
      variables: z.record(z.string(), z.unknown()).optional(),
      version: z.number().int().min(1).optional(),
    }),
    handler: ({ deps, caller, args }) => deps.services.templates.preview(caller.workspace.id, args.id, args),
  }),
  defineTool({
    name: 'templates_check',
    title: 'Check a template against mail clients',
    description:
      "Finds what would break the template in Gmail, Outlook, Apple Mail, Yahoo and Samsung Email (caniemail.com's data: unsupported CSS such as display:flex or position, elements, at-rules), size over Gmail's 102 KB clipping, images without alt, http links, a marketing template (`type: marketing`) without an unsubscribe link, undeclared variables. Each finding has its lines, clients and a suggestion. Reads only.",
    family: 'templates',
    scope: 'templates:read',
    operation: 'api',
    rest: 'POST /v1/templates/:id/check',
    annotations: READ,
    input: z.object({
      id: idOrAlias,
      type: z.enum(['transactional', 'marketing']).optional(),
      version: z.number().int().min(1).optional(),
    }),
    handler: ({ deps, caller, args }) => deps.services.templates.check(caller.workspace.id, args.id, args),
  }),
  defineTool({
    name: 'templates_versions',
    title: "List a template's versions",
    description:
      'Lists the published versions of a template, newest first; `published` marks the one sends use. Reads only.',
    family: 'templates',
    scope: 'templates:read',
    operation: 'api',
    rest: 'GET /v1/templates/:id/versions',
    annotations: READ,
    input: z.object({ id: idOrAlias }),
    handler: async ({ deps, caller, args }) => ({
      versions: await deps.services.templates.versions(caller.workspace.id, args.id),
    }),
  }),
  defineTool({
    name: 'templates_restore',
    title: 'Restore a version',
    description:
      "Makes a published version's content the template's draft again; sends keep the published version until it is published. Writes one row.",
    family: 'templates',
    scope: 'templates:write',
    operation: 'api',
    rest: 'POST /v1/templates/:id/versions/:version/restore',
    annotations: WRITE,
    input: z.object({ id: idOrAlias, version: z.number().int().min(1) }),
    handler: ({ deps, caller, args }) => deps.services.templates.restore(caller.workspace.id, args.id, args.version),
  }),
  defineTool({
    name: 'templates_send_test',
    title: 'Send a test of a template',
    description:
      'Sends the template (its published version; the draft if never published) to one address with the given variables, as any send: it counts against the sending rate, and a test key only simulates it. Give `idempotency_key` so that a retry does not send twice.',
    family: 'templates',
    scope: 'emails:send',
    operation: null,
    rest: 'POST /v1/emails',
    annotations: SEND,
    idempotent: true,
    input: z.object({
      id: idOrAlias,
      to: z.string().describe('One address'),
      from: z.string().optional().describe("The sender (default: the template's)"),
      variables: z.record(z.string(), z.unknown()).optional(),
    }),
    handler: async ({ deps, caller, args }) => {
      const sender = {
        test: caller.principal.kind === 'test',
        senderDomainId: caller.principal.domainId,
        now: deps.clock.now(),
      };
      const input = toSendInput(
        { from: args.from, template_id: args.id, variables: args.variables, tags: [{ name: 'template_test' }] },
        args.to,
        sender,
      );
      const sent = (await deps.services.send.send(caller.workspace, input)).results[0]!;
      return { id: sent.id, status: sent.status };
    },
  }),
];
