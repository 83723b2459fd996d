import { z } from 'zod';
import { parsePage } from '../../../store/list-page.js';
import { CREATE, READ, WRITE, defineTool } from '../tool.js';

const idOrAlias = z.string().min(1).max(200).describe('The template id, or its alias');

const variable = z.object({
  key: z.string().describe('The name used as {{key}} in the subject, HTML and text'),
  type: z.enum(['string', 'number']),
  fallback_value: z.union([z.string(), z.number()]).nullable().optional().describe('Used when a send gives no value'),
});

const fields = {
  name: z.string().describe('A name for people'),
  subject: z.string().nullable().optional(),
  html: z.string().describe('The HTML body; {{variables}} are filled at send time'),
  text: z.string().nullable().optional().describe('The plain-text part (derived from the HTML when absent)'),
  alias: z.string().nullable().optional().describe('Another name to send or read it by'),
  from: z.string().nullable().optional().describe('The default sender of mail using it'),
  reply_to: z.union([z.string(), z.array(z.string()).max(50)]).nullable().optional(),
  variables: z.array(variable).max(50).nullable().optional(),
};

export const templateTools = [
  defineTool({
    name: 'templates_list',
    title: 'List templates',
    description: 'Lists the workspace\'s templates, newest first (20 a page; `offset` for the next). Reads only.',
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
    description: 'Reads one template (by id or alias): its subject, HTML, text, declared variables and whether it is published. Reads only.',
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
    description: 'Creates a template as a draft: nothing is sent and nothing uses it until a send names it. Writes one row.',
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
    description: 'Changes the fields given (by id or alias). A published template keeps sending its published version until it is published again. Writes one row.',
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
    description: 'Makes the template\'s current content the version that sends use. Sends already made keep what they used. Writes one row.',
    family: 'templates',
    scope: 'templates:write',
    operation: 'api',
    rest: 'POST /v1/templates/:id/publish',
    annotations: WRITE,
    input: z.object({ id: idOrAlias }),
    handler: ({ deps, caller, args }) => deps.services.templates.publish(caller.workspace.id, args.id),
  }),
];
