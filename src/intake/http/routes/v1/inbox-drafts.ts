import { z } from 'zod';
import { parsePage } from '../../../../store/infra/list-page.js';
import {
  AGENT_ACTIONS,
  AGENT_TONES,
  MAX_FORWARD_TO,
  MAX_INSTRUCTIONS,
} from '../../../../services/inboxes/agent-settings.js';
import type { SendResult } from '../../../../services/send/send-input.js';
import type { Db } from '../../../../store/infra/db.js';
import { defineRoute, type HandlerInput } from '../../route.js';
import { v1AttachmentSchema } from './emails.js';

/**
 * Drafts and the agent's settings of an inbox, as the Resend SDK's `inboxes.drafts` and
 * `inboxes.agent` call them (`:id` is the inbox's id or address).
 */

const addresses = z.union([z.string(), z.array(z.string()).max(50)]).nullable();
const content = {
  to: addresses.optional(),
  cc: addresses.optional(),
  bcc: addresses.optional(),
  subject: z.string().max(998).nullable().optional(),
  text: z.string().nullable().optional(),
  html: z.string().nullable().optional(),
};
const createDraftBody = z.object({
  ...content,
  attachments: z.array(v1AttachmentSchema).max(50).optional(),
  thread_id: z.string().max(100).optional(),
  reply_to_email_id: z.string().max(100).optional(),
});
const updateDraftBody = z.object({
  ...content,
  attachments: z.array(v1AttachmentSchema).max(50).nullable().optional(),
});
const sendDraftBody = z.object({ headers: z.record(z.string(), z.string()).nullable().optional() });

const agentBody = z.object({
  instructions: z.string().max(MAX_INSTRUCTIONS).nullable().optional(),
  tone: z.enum(AGENT_TONES).nullable().optional(),
  actions: z
    .array(z.enum(AGENT_ACTIONS))
    .max(AGENT_ACTIONS.length * 2)
    .optional(),
  /** Where forward_thread may send besides the workspace's verified domains: addresses and "@domain"; a forward elsewhere becomes a draft. */
  forward_to: z.array(z.string().max(320)).max(MAX_FORWARD_TO).optional(),
});

export const v1InboxDraftRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/drafts',
    summary: 'List the drafts of an inbox not yet sent, last edited first (keyset pagination)',
    operation: 'api',
    scope: 'receiving:read',
    query: z.looseObject({ limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() }),
    handler: async ({ deps, workspace, params, query }) => {
      const { data, more } = await deps.services.inboxDrafts.list(workspace.id, params.id!, parsePage(query, 'keyset'));
      return { object: 'list', has_more: more, data };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/inboxes/:id/drafts',
    summary:
      'Create a draft: standalone, or a reply (thread_id and reply_to_email_id: addressed and titled as an answer unless given)',
    operation: 'api',
    scope: 'receiving:write',
    idempotent: true,
    body: createDraftBody,
    status: 201,
    handler: ({ deps, workspace, params, body }) => {
      const { thread_id, reply_to_email_id, ...rest } = body;
      return deps.services.inboxDrafts.create(workspace.id, params.id!, {
        ...rest,
        threadId: thread_id,
        replyToEmailId: reply_to_email_id,
      });
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/drafts/:draftId',
    summary: 'Read a draft (email_id: the email it became, once sent)',
    operation: 'api',
    scope: 'receiving:read',
    handler: ({ deps, workspace, params }) => deps.services.inboxDrafts.get(workspace.id, params.id!, params.draftId!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/inboxes/:id/drafts/:draftId',
    summary: 'Change a draft not yet sent; attachments, when given, replace all of them (null or [] removes them)',
    operation: 'api',
    scope: 'receiving:write',
    body: updateDraftBody,
    handler: ({ deps, workspace, params, body }) =>
      deps.services.inboxDrafts.update(workspace.id, params.id!, params.draftId!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/inboxes/:id/drafts/:draftId',
    summary: 'Delete a draft',
    operation: 'api',
    scope: 'receiving:write',
    handler: async ({ deps, workspace, params }) => {
      const { id } = await deps.services.inboxDrafts.remove(workspace.id, params.id!, params.draftId!);
      return { object: 'inbox_draft', id, deleted: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/inboxes/:id/drafts/:draftId/send',
    summary:
      "Send a draft from the inbox's address, once, like any email (a reply with In-Reply-To and References); it joins its thread",
    operation: null,
    scope: 'emails:send',
    idempotent: true,
    body: sendDraftBody,
    handler: (input: HandlerInput<z.infer<typeof sendDraftBody>, unknown>) => {
      const { deps, workspace, params, body, principal, idempotency } = input;
      return deps.services.inboxDrafts.send(
        workspace,
        { test: principal.kind === 'test', senderDomainId: principal.domainId },
        params.id!,
        params.draftId!,
        body.headers,
        async (trx: Db, result: SendResult) => {
          await idempotency?.complete(200, { id: result.id }, trx);
        },
      );
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/agent',
    summary:
      "Read the inbox agent's settings (instructions, tone, actions); `runtime` says whether an agent acts on them",
    operation: 'api',
    scope: 'receiving:read',
    handler: ({ deps, workspace, params }) => deps.services.inboxAgent.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/inboxes/:id/agent',
    summary:
      "Change the inbox agent's instructions, tone, allowed actions or the addresses it may forward to (`forward_to`)",
    operation: 'api',
    scope: 'receiving:write',
    body: agentBody,
    handler: async ({ deps, workspace, params, body }) => {
      const { id, settings } = await deps.services.inboxAgent.update(workspace.id, params.id!, body);
      return { ...settings, id };
    },
  }),
];
