import { z } from 'zod';
import { parsePage } from '../../../../store/infra/list-page.js';
import { INBOX_FOLDERS, type InboxFolder } from '../../../../store/inboxes.js';
import { validationError } from '../../../../shared/errors.js';
import { defineRoute, type HandlerInput } from '../../route.js';
import type { Db } from '../../../../store/infra/db.js';
import type { SendResult } from '../../../../services/send/send-input.js';
import { v1AttachmentSchema } from './emails.js';
import { isOneOf } from '../../../../shared/one-of.js';

/**
 * The conversations of an inbox, as the Resend SDK's `inboxes.threads` and `inboxes.labels`
 * call them: `/v1/inboxes/:id/threads…` and `/v1/inboxes/:id/labels…` (`:id` is the inbox's
 * id or address). Lists in the query are comma separated, as the SDK sends them.
 */

const pageQuery = { limit: z.string().optional(), after: z.string().optional(), before: z.string().optional() };

const commaList = (field: string, value: string | undefined): string[] | undefined => {
  if (value === undefined || value === '') return undefined;
  const items = value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  if (items.length > 50) throw validationError(field, 'at most 50 values');
  if (items.some((v) => v.length > 320 || CONTROL.test(v)))
    throw validationError(field, 'values are at most 320 printable characters');
  return items;
};

const folders = (value: string | undefined): InboxFolder[] | undefined =>
  commaList('folders', value)?.map((f) => {
    if (!isOneOf(INBOX_FOLDERS, f)) throw validationError('folders', `must be among ${INBOX_FOLDERS.join(', ')}`);
    return f;
  });

const CONTROL = /[\u0000-\u001f\u007f]/;

const bool = z.enum(['true', 'false']).optional();
const toBool = (value: 'true' | 'false' | undefined) => (value === undefined ? undefined : value === 'true');

const date = (field: string, value: string | undefined): number | undefined => {
  if (value === undefined || value === '') return undefined;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms))
    throw validationError(field, 'must be an ISO 8601 date or date and time');
  return ms;
};

const listQuery = z.looseObject({
  ...pageQuery,
  folders: z
    .string()
    .optional()
    .describe(`Comma separated folders among ${INBOX_FOLDERS.join(', ')}`),
  labels: z.string().optional().describe('Comma separated label ids or names; a thread with any of them matches'),
  read: bool.describe('true: read threads only; false: threads with an unread message'),
});

const searchQuery = listQuery.extend({
  query: z
    .string()
    .max(500)
    .regex(/^[^\u0000]*$/, 'must not contain NUL characters')
    .optional()
    .describe(
      'Words, all of which appear in the subject, the participants or the text of one message (full-text index)',
    ),
  from: z.string().optional().describe('Comma separated sender addresses'),
  to: z.string().optional().describe('Comma separated recipient addresses'),
  cc: z.string().optional(),
  bcc: z.string().optional(),
  has_attachment: bool,
  start_date: z.string().optional().describe('Messages at or after this ISO 8601 date'),
  end_date: z.string().optional().describe('Messages at or before this ISO 8601 date'),
});

const threadChanges = z.object({
  read: z.boolean().optional(),
  folder: z.enum(['inbox', 'archive', 'spam', 'trash']).optional(),
});

const labelIds = z.object({ labels: z.array(z.string().max(100)).max(100) });
const labelBody = z.object({ name: z.string().max(200), color: z.string().max(20).optional() });
const labelChanges = z.object({ name: z.string().max(200).optional(), color: z.string().max(20).optional() });

const addresses = z.union([z.string(), z.array(z.string()).max(50)]);
const outgoing = {
  cc: addresses.optional(),
  bcc: addresses.optional(),
  html: z.string().optional(),
  text: z.string().optional(),
  subject: z.string().max(998).optional(),
  attachments: z.array(v1AttachmentSchema).max(50).optional(),
  headers: z.record(z.string(), z.string()).nullable().optional(),
};
const replyBody = z.object({ ...outgoing, reply_all: z.boolean().optional() });
const forwardBody = z.object({ ...outgoing, to: addresses });

/** Who is sending: a test key's mail is simulated; a restricted key sends from its domain only. */
const callerOf = ({ principal }: HandlerInput<unknown, unknown>) => ({
  test: principal.kind === 'test',
  senderDomainId: principal.domainId,
});

/** The answer to a send, recorded for Idempotency-Key in the transaction that queues the mail. */
const recordAnswer =
  ({ idempotency }: HandlerInput<unknown, unknown>) =>
  async (trx: Db, result: SendResult) => {
    await idempotency?.complete(200, { id: result.id }, trx);
  };

export const v1InboxThreadRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/threads',
    summary: 'List the threads of an inbox, latest activity first (folders, labels, read; keyset pagination)',
    operation: 'api',
    scope: 'receiving:read',
    query: listQuery,
    handler: async ({ deps, workspace, params, query }) => {
      const page = parsePage(query, 'keyset');
      const { data, more } = await deps.services.inboxThreads.list(
        workspace.id,
        params.id!,
        { folders: folders(query.folders), labels: commaList('labels', query.labels), read: toBool(query.read) },
        page,
      );
      return { object: 'list', has_more: more, data };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/threads/search',
    summary: 'Search the threads of an inbox: words (full-text), sender and recipients, attachments, dates',
    operation: 'api',
    scope: 'receiving:read',
    query: searchQuery,
    handler: async ({ deps, workspace, params, query }) => {
      const page = parsePage(query, 'keyset');
      const { data, more } = await deps.services.inboxThreads.search(
        workspace.id,
        params.id!,
        {
          folders: folders(query.folders),
          labels: commaList('labels', query.labels),
          read: toBool(query.read),
          query: query.query,
          from: commaList('from', query.from),
          to: commaList('to', query.to),
          cc: commaList('cc', query.cc),
          bcc: commaList('bcc', query.bcc),
          hasAttachment: toBool(query.has_attachment),
          startDate: date('start_date', query.start_date),
          endDate: date('end_date', query.end_date),
        },
        page,
      );
      return { object: 'list', has_more: more, data };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/threads/:threadId',
    summary: 'Read one thread: folder, labels, read state, its newest sender and recipients',
    operation: 'api',
    scope: 'receiving:read',
    handler: ({ deps, workspace, params }) =>
      deps.services.inboxThreads.get(workspace.id, params.id!, params.threadId!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/inboxes/:id/threads/:threadId',
    summary: 'Mark a thread read or unread, or move it to inbox, archive, spam or trash',
    operation: 'api',
    scope: 'receiving:write',
    body: threadChanges,
    handler: ({ deps, workspace, params, body }) =>
      deps.services.inboxThreads.update(workspace.id, params.id!, params.threadId!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/inboxes/:id/threads/:threadId',
    summary: 'Delete a thread from the inbox (the received and sent emails stay in their logs)',
    operation: 'api',
    scope: 'receiving:write',
    handler: async ({ deps, workspace, params }) => {
      const { id } = await deps.services.inboxThreads.remove(workspace.id, params.id!, params.threadId!);
      return { object: 'inbox_thread', id, deleted: true };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/threads/:threadId/emails',
    summary: 'List the messages of a thread, received and sent, oldest first',
    operation: 'api',
    scope: 'receiving:read',
    query: z.looseObject(pageQuery),
    handler: async ({ deps, workspace, params, query }) => {
      const { data, more } = await deps.services.inboxThreads.messages(
        workspace.id,
        params.id!,
        params.threadId!,
        parsePage(query, 'keyset'),
      );
      return { object: 'list', has_more: more, data };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/threads/:threadId/emails/:emailId',
    summary: 'Read one message of a thread (its id is the received email id, or the sent email id)',
    operation: 'api',
    scope: 'receiving:read',
    handler: ({ deps, workspace, params }) =>
      deps.services.inboxThreads.message(workspace.id, params.id!, params.threadId!, params.emailId!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/inboxes/:id/threads/:threadId/emails/:emailId/reply',
    summary:
      "Reply to a message of a thread from the inbox's address (reply_all: its other recipients in cc), quoting it, with In-Reply-To and References; sent like any email and filed in the thread",
    operation: null,
    scope: 'emails:send',
    idempotent: true,
    body: replyBody,
    handler: (input) => {
      const { deps, workspace, params, body } = input;
      return deps.services.inboxReplies.reply(
        workspace,
        callerOf(input),
        params.id!,
        params.threadId!,
        params.emailId!,
        { ...body, replyAll: body.reply_all },
        recordAnswer(input),
      );
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/inboxes/:id/threads/:threadId/emails/:emailId/forward',
    summary:
      "Forward a message of a thread from the inbox's address, with its attachments and the caller's note; filed in the thread",
    operation: null,
    scope: 'emails:send',
    idempotent: true,
    body: forwardBody,
    handler: (input) => {
      const { deps, workspace, params, body } = input;
      return deps.services.inboxReplies.forward(
        workspace,
        callerOf(input),
        params.id!,
        params.threadId!,
        params.emailId!,
        body,
        recordAnswer(input),
      );
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/inboxes/:id/threads/:threadId/labels',
    summary: 'Add labels (1 to 10 label ids) to a thread',
    operation: 'api',
    scope: 'receiving:write',
    body: labelIds,
    handler: async ({ deps, workspace, params, body }) => ({
      object: 'list',
      data: await deps.services.inboxThreads.addLabels(workspace.id, params.id!, params.threadId!, body.labels),
    }),
  }),
  defineRoute({
    method: 'PUT',
    path: '/v1/inboxes/:id/threads/:threadId/labels',
    summary: 'Replace the labels of a thread (0 to 10 label ids)',
    operation: 'api',
    scope: 'receiving:write',
    body: labelIds,
    handler: async ({ deps, workspace, params, body }) => ({
      object: 'list',
      data: await deps.services.inboxThreads.setLabels(workspace.id, params.id!, params.threadId!, body.labels),
    }),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/inboxes/:id/threads/:threadId/labels/:labelId',
    summary: 'Take one label off a thread',
    operation: 'api',
    scope: 'receiving:write',
    handler: async ({ deps, workspace, params }) => ({
      object: 'list',
      data: await deps.services.inboxThreads.removeThreadLabel(
        workspace.id,
        params.id!,
        params.threadId!,
        params.labelId!,
      ),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/inboxes/:id/labels',
    summary: 'List the labels of an inbox, by name',
    operation: 'api',
    scope: 'receiving:read',
    handler: async ({ deps, workspace, params }) => ({
      object: 'list',
      data: await deps.services.inboxThreads.labels(workspace.id, params.id!),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/inboxes/:id/labels',
    summary: 'Create a label (a name unique in the inbox, a colour as #RRGGBB; one is chosen when none is given)',
    operation: 'api',
    scope: 'receiving:write',
    body: labelBody,
    status: 201,
    handler: ({ deps, workspace, params, body }) =>
      deps.services.inboxThreads.createLabel(workspace.id, params.id!, body),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/inboxes/:id/labels/:labelId',
    summary: 'Rename a label or change its colour',
    operation: 'api',
    scope: 'receiving:write',
    body: labelChanges,
    handler: ({ deps, workspace, params, body }) =>
      deps.services.inboxThreads.updateLabel(workspace.id, params.id!, params.labelId!, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/inboxes/:id/labels/:labelId',
    summary: 'Delete a label; the threads that had it lose it',
    operation: 'api',
    scope: 'receiving:write',
    handler: async ({ deps, workspace, params }) => {
      const { id } = await deps.services.inboxThreads.removeLabel(workspace.id, params.id!, params.labelId!);
      return { object: 'inbox_label', id, deleted: true };
    },
  }),
];
