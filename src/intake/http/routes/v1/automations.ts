import { z } from 'zod';
import { parsePage } from '../../../../store/infra/list-page.js';
import { defineRoute } from '../../route.js';

/**
 * Workflows in Resend's automation shapes (the SDK's `automations.*` and `automations.runs.*`).
 * Parsing and rendering only: the definition is checked by the workflow service.
 */

const pageQuery = {
  limit: z.string().optional().describe('Items per page, 1 to 100 (default 20)'),
  after: z.string().optional().describe('An id: the page after it (older)'),
  before: z.string().optional().describe('An id: the page before it (newer)'),
};

const definitionFields = {
  steps: z
    .array(z.unknown())
    .describe(
      'Steps: `{key, type, config}`; type one of trigger, delay, send_email, wait_for_event, condition, contact_update, contact_delete, add_to_segment',
    ),
  connections: z
    .array(z.unknown())
    .describe(
      'Connections: `{from, to, type}`; type one of default, condition_met, condition_not_met, event_received, timeout',
    ),
  allow_reentry: z
    .boolean()
    .optional()
    .describe('Let a contact be in several runs of the workflow at once (default false)'),
};

const createBody = z.object({
  name: z.string(),
  status: z.string().optional().describe('draft (default), enabled or disabled'),
  ...definitionFields,
  connections: definitionFields.connections.optional(),
});

const updateBody = z.object({
  name: z.string().optional(),
  status: z.string().optional(),
  steps: definitionFields.steps.optional(),
  connections: definitionFields.connections.optional(),
  allow_reentry: definitionFields.allow_reentry,
});

const list = <T>(page: { items: T[]; more: boolean }) => ({
  object: 'list' as const,
  has_more: page.more,
  data: page.items,
});

export const v1AutomationRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/automations',
    summary: 'Create a workflow (an automation): a trigger and steps joined by connections, validated when saved',
    operation: 'api',
    scope: 'workflows:write',
    idempotent: true,
    status: 201,
    body: createBody,
    handler: ({ deps, workspace, body }) =>
      deps.services.workflows.create(workspace.id, { ...body, connections: body.connections ?? [] }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/automations',
    summary: 'List workflows, newest first (keyset pagination: limit, after, before), by status',
    operation: 'api',
    scope: 'workflows:read',
    query: z.looseObject({ ...pageQuery, status: z.string().optional().describe('draft, enabled or disabled') }),
    handler: async ({ deps, workspace, query }) =>
      list(await deps.services.workflows.list(workspace.id, parsePage(query, 'keyset'), query.status)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/automations/:id',
    summary: 'Read a workflow: its steps, connections and how many runs are in each status',
    operation: 'api',
    scope: 'workflows:read',
    handler: ({ deps, workspace, params }) => deps.services.workflows.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/automations/:id',
    summary:
      'Change a workflow: name, status, re-entry, or its steps and connections (together; runs in progress keep the version they started with)',
    operation: 'api',
    scope: 'workflows:write',
    body: updateBody,
    handler: ({ deps, workspace, params, body }) => deps.services.workflows.update(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/automations/:id',
    summary: 'Delete a workflow with its runs (runs in progress end where they are)',
    operation: 'api',
    scope: 'workflows:write',
    handler: async ({ deps, workspace, params }) => {
      const workflow = await deps.services.workflows.get(workspace.id, params.id!);
      await deps.services.workflows.remove(workspace.id, workflow.id);
      return { object: 'automation', id: workflow.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/automations/:id/duplicate',
    summary: 'Copy a workflow, as a draft named "<name> (copy)"',
    operation: 'api',
    scope: 'workflows:write',
    status: 201,
    handler: ({ deps, workspace, params }) => deps.services.workflows.duplicate(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/automations/:id/stop',
    summary: 'Stop a workflow: disable it and cancel every run in progress',
    operation: 'api',
    scope: 'workflows:write',
    handler: async ({ deps, workspace, params }) => {
      const { workflow, cancelled } = await deps.services.workflows.stop(workspace.id, params.id!);
      return { object: 'automation', id: workflow.id, status: workflow.status, cancelled_runs: cancelled };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/automations/:id/runs',
    summary: "List a workflow's runs, newest first (keyset pagination), by status (comma-separated)",
    operation: 'api',
    scope: 'workflows:read',
    query: z.looseObject({
      ...pageQuery,
      status: z.string().optional().describe('running, completed, failed or cancelled; several separated by commas'),
    }),
    handler: async ({ deps, workspace, params, query }) =>
      list(await deps.services.workflows.runs(workspace.id, params.id!, parsePage(query, 'keyset'), query.status)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/automations/:id/runs/:run_id',
    summary: 'Read a run: its contact, status and every step it went through, with times, outputs and errors',
    operation: 'api',
    scope: 'workflows:read',
    handler: ({ deps, workspace, params }) => deps.services.workflows.run(workspace.id, params.id!, params.run_id!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/automations/:id/runs/:run_id/cancel',
    summary: 'Cancel a run in progress: its remaining steps are skipped (emails already sent stay sent)',
    operation: 'api',
    scope: 'workflows:write',
    handler: ({ deps, workspace, params }) =>
      deps.services.workflows.cancelRun(workspace.id, params.id!, params.run_id!),
  }),
];

const eventSchemaDoc = 'An object of payload field names to string, number, boolean or date (at most 50), or null';

export const v1WorkflowEventRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/events',
    summary: 'Declare a custom event: its name and the types of its payload fields, checked on events/send',
    operation: 'api',
    scope: 'workflows:write',
    status: 201,
    body: z.object({ name: z.string().optional(), schema: z.unknown().optional().describe(eventSchemaDoc) }),
    handler: async ({ deps, workspace, body }) => deps.services.eventDefinitions.create(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/events',
    summary: 'List declared custom events, newest first (limit, after, before)',
    operation: 'api',
    scope: 'workflows:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: ({ deps, workspace, query }) =>
      deps.services.eventDefinitions.list(workspace.id, query as Record<string, unknown>),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/events/:id',
    summary: 'Read one declared event (by id or name)',
    operation: 'api',
    scope: 'workflows:read',
    handler: ({ deps, workspace, params }) => deps.services.eventDefinitions.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/events/:id',
    summary: "Replace a declared event's schema (null: any payload)",
    operation: 'api',
    scope: 'workflows:write',
    body: z.object({ schema: z.unknown().describe(eventSchemaDoc) }),
    handler: ({ deps, workspace, params, body }) =>
      deps.services.eventDefinitions.update(workspace.id, params.id!, body.schema),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/events/:id',
    summary: 'Remove a declared event: its payloads are no longer checked',
    operation: 'api',
    scope: 'workflows:write',
    handler: async ({ deps, workspace, params }) => {
      const removed = await deps.services.eventDefinitions.remove(workspace.id, params.id!);
      return { object: 'event', id: removed.id, deleted: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/events/send',
    summary:
      'Send a custom event for one contact (by contact_id or email): it starts the enabled workflows it triggers and resumes runs waiting for it',
    operation: 'api',
    scope: 'workflows:write',
    idempotent: true,
    status: 202,
    body: z.object({
      event: z.string(),
      contact_id: z.string().optional(),
      email: z.string().optional(),
      payload: z.record(z.string(), z.unknown()).optional(),
    }),
    handler: async ({ deps, workspace, principal, body }) => {
      const sent = await deps.services.workflows.sendEvent(workspace.id, {
        event: body.event,
        contactId: body.contact_id,
        email: body.email,
        payload: body.payload,
        test: principal.kind === 'test',
      });
      return { object: 'event', event: sent.event, id: sent.id };
    },
  }),
];
