import { z } from 'zod';
import { parsePage } from '../../../store/infra/list-page.js';
import { CREATE, READ, defineTool } from '../tool.js';

const inbox = z.string().describe("The inbox's id or address");
const page = {
  limit: z.number().int().min(1).max(100).optional(),
  after: z.string().optional().describe('The last thread id of the previous page'),
};

/** Inboxes: reading threads and drafting replies. No tool sends: a person sends drafts. */
export const inboxTools = [
  defineTool({
    name: 'inboxes_list',
    title: 'List inboxes',
    description:
      "Lists the workspace's inboxes (addresses that receive mail) with unread and draft counts. Reads only.",
    family: 'inboxes',
    scope: 'receiving:read',
    operation: 'api',
    rest: 'GET /v1/inboxes',
    annotations: READ,
    input: z.object(page),
    handler: async ({ deps, caller, args }) => {
      const { items, more } = await deps.services.routes.page(
        caller.workspace.id,
        'address',
        parsePage(args, 'keyset'),
      );
      const counts = await deps.services.inboxThreads.counts(items.map((r) => r.id));
      return { inboxes: items.map((r) => ({ ...r, ...counts.get(r.id) })), has_more: more };
    },
  }),
  defineTool({
    name: 'inboxes_threads',
    title: 'List or search threads',
    description:
      'Lists the threads of an inbox, latest activity first; with `query` (words, full-text) or `from`, searches them. Reads only.',
    family: 'inboxes',
    scope: 'receiving:read',
    operation: 'api',
    rest: 'GET /v1/inboxes/:id/threads/search',
    annotations: READ,
    input: z.object({
      inbox,
      query: z.string().max(500).optional(),
      from: z.string().optional(),
      unread: z.boolean().optional(),
      ...page,
    }),
    handler: async ({ deps, caller, args }) => {
      const listPage = parsePage(args, 'keyset');
      const read = args.unread === undefined ? undefined : !args.unread;
      const found =
        args.query !== undefined || args.from !== undefined
          ? await deps.services.inboxThreads.search(
              caller.workspace.id,
              args.inbox,
              { read, query: args.query, from: args.from === undefined ? undefined : [args.from] },
              listPage,
            )
          : await deps.services.inboxThreads.list(caller.workspace.id, args.inbox, { read }, listPage);
      return { threads: found.data, has_more: found.more };
    },
  }),
  defineTool({
    name: 'inboxes_read_thread',
    title: 'Read a thread',
    description:
      'Reads one thread of an inbox with its messages, oldest first (text and HTML). Reads only; does not mark it read.',
    family: 'inboxes',
    scope: 'receiving:read',
    operation: 'api',
    rest: 'GET /v1/inboxes/:id/threads/:threadId/emails',
    annotations: READ,
    input: z.object({ inbox, thread_id: z.string() }),
    handler: async ({ deps, caller, args }) => {
      const [thread, messages] = await Promise.all([
        deps.services.inboxThreads.get(caller.workspace.id, args.inbox, args.thread_id),
        deps.services.inboxThreads.messages(
          caller.workspace.id,
          args.inbox,
          args.thread_id,
          parsePage({ limit: 100 }, 'keyset'),
        ),
      ]);
      return { thread, messages: messages.data, has_more: messages.more };
    },
  }),
  defineTool({
    name: 'inboxes_draft_reply',
    title: 'Draft a reply',
    description:
      'Saves a draft reply to a message of a thread (addressed and titled as an answer unless given). It is NOT sent: a person reviews and sends it from the dashboard or the API. Writes one row.',
    family: 'inboxes',
    scope: 'receiving:write',
    operation: 'api',
    rest: 'POST /v1/inboxes/:id/drafts',
    annotations: CREATE,
    idempotent: true,
    input: z.object({
      inbox,
      thread_id: z.string(),
      reply_to_email_id: z.string().describe('The message answered'),
      text: z.string().optional(),
      html: z.string().optional(),
      subject: z.string().max(998).optional(),
    }),
    handler: ({ deps, caller, args }) =>
      deps.services.inboxDrafts.create(caller.workspace.id, args.inbox, {
        text: args.text,
        html: args.html,
        subject: args.subject,
        threadId: args.thread_id,
        replyToEmailId: args.reply_to_email_id,
      }),
  }),
];
