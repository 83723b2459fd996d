import { formatMailbox } from '../../receiving/routes/parse-inbound.js';
import { parseMailboxes } from '../../messages/addresses.js';
import { resolveAttachments, type AttachmentFetcher, type AttachmentInput } from '../../messages/attachments.js';
import { prefixedSubject } from '../../messages/quote-message.js';
import { toIso } from '../../shared/clock.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { Db } from '../../store/infra/db.js';
import {
  findDraft,
  findThread,
  findThreadMessage,
  listDraftAttachmentInfo,
  listDraftAttachments,
  listDraftsPage,
  markDraftSent,
  removeDraft,
  replaceDraftAttachments,
  saveDraft,
  updateDraft,
  type InboxDraft,
  type InboxDraftAttachment,
} from '../../store/inboxes.js';
import type { ListPage } from '../../store/infra/list-page.js';
import type { Workspace } from '../../store/workspaces.js';
import type { ServiceDeps } from '../deps.js';
import type { SendService } from '../send/send-email.js';
import type { InboxReplyService, InTransaction } from './inbox-replies.js';
import type { InboxThreadService } from './inbox-threads.js';
import { messageIdOf } from './inbox-views.js';
import { checkCallerHeaders, checkNoNul, sendFromInbox, type Caller } from './send-from-inbox.js';

/**
 * Drafts of an inbox: standalone messages, or replies to a message of a thread (recipients,
 * subject and threading headers from it). Editable until sent; sending goes through the one
 * path out of an inbox (send-from-inbox.ts), and the draft keeps the id of the email it became.
 */

type Addresses = string | string[] | null | undefined;

interface DraftContent {
  to?: Addresses;
  cc?: Addresses;
  bcc?: Addresses;
  subject?: string | null | undefined;
  text?: string | null | undefined;
  html?: string | null | undefined;
  /** null or []: no attachments. */
  attachments?: AttachmentInput[] | null | undefined;
}

interface NewDraft extends DraftContent {
  threadId?: string | undefined;
  replyToEmailId?: string | undefined;
}

const SNIPPET = 120;

const attachmentView = (a: Omit<InboxDraftAttachment, 'content'>) => ({
  id: a.id,
  filename: a.filename,
  content_type: a.content_type,
  size: a.size,
});

function draftView(d: InboxDraft, attachments: Array<Omit<InboxDraftAttachment, 'content'>>) {
  return {
    object: 'inbox_draft' as const,
    id: d.id,
    type: d.thread_id ? ('reply' as const) : ('standalone' as const),
    to: d.to_addresses,
    cc: d.cc_addresses,
    bcc: d.bcc_addresses,
    subject: d.subject,
    html: d.html,
    text: d.text,
    thread_id: d.thread_id,
    reply_to_email_id: d.reply_to_message_id,
    email_id: d.email_id,
    created_at: toIso(d.created_at),
    updated_at: toIso(d.updated_at),
    attachments: attachments.map(attachmentView),
  };
}
type DraftView = ReturnType<typeof draftView>;

const snippetOf = (d: InboxDraft): string | null => {
  const source = d.text ?? (d.html ? d.html.replace(/<[^>]+>/g, ' ') : null);
  if (source === null) return null;
  const flat = source.replace(/\s+/g, ' ').trim();
  return flat.length > SNIPPET ? `${flat.slice(0, SNIPPET - 1)}…` : flat;
};

const draftListItem = (d: InboxDraft, attachments: Array<Omit<InboxDraftAttachment, 'content'>>) => {
  const {
    object: _object,
    html: _html,
    text: _text,
    email_id: _emailId,
    created_at: _createdAt,
    ...rest
  } = draftView(d, attachments);
  return { ...rest, snippet: snippetOf(d) };
};

export interface InboxDraftService {
  list(
    workspaceId: string,
    inbox: string,
    page: ListPage,
  ): Promise<{ data: Array<ReturnType<typeof draftListItem>>; more: boolean }>;
  create(workspaceId: string, inbox: string, input: NewDraft): Promise<DraftView>;
  get(workspaceId: string, inbox: string, draftId: string): Promise<DraftView>;
  update(workspaceId: string, inbox: string, draftId: string, changes: DraftContent): Promise<DraftView>;
  remove(workspaceId: string, inbox: string, draftId: string): Promise<{ id: string }>;
  send(
    workspace: Workspace,
    caller: Caller,
    inbox: string,
    draftId: string,
    headers: Record<string, string> | null | undefined,
    inTransaction?: InTransaction,
  ): Promise<{ id: string }>;
}

export function createInboxDraftService(
  deps: ServiceDeps & {
    send: SendService;
    inboxThreads: InboxThreadService;
    inboxReplies: InboxReplyService;
    fetchAttachment: AttachmentFetcher | null;
  },
): InboxDraftService {
  const { db, clock, inboxThreads, inboxReplies } = deps;

  async function find(workspaceId: string, inboxRef: string, draftId: string) {
    const inbox = await inboxThreads.inbox(workspaceId, inboxRef);
    const draft = isUuid(draftId) ? await findDraft(db, inbox.id, draftId.toLowerCase()) : undefined;
    if (!draft) throw notFound(`Draft ${draftId}`);
    return { inbox, draft };
  }

  async function view(d: InboxDraft): Promise<DraftView> {
    return draftView(d, (await listDraftAttachmentInfo(db, [d.id])).get(d.id) ?? []);
  }

  /** Addresses as stored: each checked, kept as written (`Name <address>` or the address). */
  const addresses = (field: string, value: Addresses): string[] =>
    parseMailboxes(field, value ?? undefined).map((a) => formatMailbox(a.name, a.address));

  async function files(draftId: string, inputs: AttachmentInput[]): Promise<InboxDraftAttachment[]> {
    const resolved = await resolveAttachments(inputs, deps.fetchAttachment);
    return resolved.map((a, position) => {
      if (a.content.length === 0) throw validationError(`attachments[${position}]`, 'is an empty file');
      return {
        id: newId(),
        draft_id: draftId,
        position,
        filename: a.filename,
        content_type: a.contentType,
        size: a.content.length,
        content: a.content,
      };
    });
  }

  const checkText = (c: DraftContent) => checkNoNul({ subject: c.subject, text: c.text, html: c.html });

  const hasContent = (c: DraftContent) =>
    [c.to, c.cc, c.bcc, c.subject, c.text, c.html, c.attachments].some((v) => v !== undefined);

  return {
    async list(workspaceId, inboxRef, page) {
      const inbox = await inboxThreads.inbox(workspaceId, inboxRef);
      const { rows, more } = await listDraftsPage(db, inbox.id, page);
      const attachments = await listDraftAttachmentInfo(
        db,
        rows.map((d) => d.id),
      );
      return { data: rows.map((d) => draftListItem(d, attachments.get(d.id) ?? [])), more };
    },

    async create(workspaceId, inboxRef, input) {
      if (!hasContent(input))
        throw validationError('body', 'give at least one of to, cc, bcc, subject, text, html or attachments');
      checkText(input);
      if ((input.threadId === undefined) !== (input.replyToEmailId === undefined))
        throw validationError('thread_id', 'a reply draft needs thread_id and reply_to_email_id together');
      const inbox = await inboxThreads.inbox(workspaceId, inboxRef);
      const now = clock.now();
      const id = newId();
      let replyTo: { threadId: string; messageId: string; to: string[]; cc: string[]; subject: string } | undefined;
      if (input.threadId !== undefined) {
        const { message } = await inboxReplies.original(workspaceId, inbox.id, input.threadId, input.replyToEmailId!);
        const recipients = inboxReplies.replyRecipients(inbox, message, false);
        replyTo = {
          threadId: message.thread_id,
          messageId: messageIdOf(message),
          to: recipients.to.map((a) => a.address),
          cc: [],
          subject: prefixedSubject('Re', message.subject),
        };
      }
      const draft: InboxDraft = {
        id,
        workspace_id: workspaceId,
        inbox_id: inbox.id,
        thread_id: replyTo?.threadId ?? null,
        reply_to_message_id: replyTo?.messageId ?? null,
        // A reply is addressed, and titled, as an answer unless the draft says otherwise.
        to_addresses:
          input.to !== undefined && input.to !== null ? addresses('to', input.to) : replyTo ? replyTo.to : null,
        cc_addresses: addresses('cc', input.cc),
        bcc_addresses: addresses('bcc', input.bcc),
        subject: input.subject !== undefined ? input.subject : (replyTo?.subject ?? null),
        text: input.text ?? null,
        html: input.html ?? null,
        email_id: null,
        created_at: now,
        updated_at: now,
      };
      const attachments = await files(id, input.attachments ?? []);
      await db.transaction().execute(async (trx) => {
        await saveDraft(trx, draft);
        await replaceDraftAttachments(trx, id, attachments);
      });
      await deps.durable();
      return view(draft);
    },

    async get(workspaceId, inboxRef, draftId) {
      return view((await find(workspaceId, inboxRef, draftId)).draft);
    },

    async update(workspaceId, inboxRef, draftId, changes) {
      if (!hasContent(changes))
        throw validationError('body', 'give at least one of to, cc, bcc, subject, text, html or attachments');
      checkText(changes);
      const { draft } = await find(workspaceId, inboxRef, draftId);
      if (draft.email_id)
        throw new AppError(
          'invalid_state',
          `Draft ${draft.id} was sent as email ${draft.email_id} and can no longer be changed`,
        );
      const update: Partial<InboxDraft> = {
        ...(changes.to !== undefined ? { to_addresses: changes.to === null ? null : addresses('to', changes.to) } : {}),
        ...(changes.cc !== undefined ? { cc_addresses: addresses('cc', changes.cc) } : {}),
        ...(changes.bcc !== undefined ? { bcc_addresses: addresses('bcc', changes.bcc) } : {}),
        ...(changes.subject !== undefined ? { subject: changes.subject } : {}),
        ...(changes.text !== undefined ? { text: changes.text } : {}),
        ...(changes.html !== undefined ? { html: changes.html } : {}),
        updated_at: clock.now(),
      };
      const attachments =
        changes.attachments !== undefined ? await files(draft.id, changes.attachments ?? []) : undefined;
      await db.transaction().execute(async (trx) => {
        await updateDraft(trx, draft.id, update);
        if (attachments) await replaceDraftAttachments(trx, draft.id, attachments);
      });
      await deps.durable();
      return view({ ...draft, ...update });
    },

    async remove(workspaceId, inboxRef, draftId) {
      const { draft } = await find(workspaceId, inboxRef, draftId);
      await removeDraft(db, draft.id);
      await deps.durable();
      return { id: draft.id };
    },

    async send(workspace, caller, inboxRef, draftId, headers, inTransaction) {
      checkCallerHeaders(headers);
      const { inbox, draft } = await find(workspace.id, inboxRef, draftId);
      if (draft.email_id)
        throw new AppError('invalid_state', `Draft ${draft.id} was already sent as email ${draft.email_id}`);
      const to = parseMailboxes('to', draft.to_addresses ?? []);
      if (to.length === 0) throw validationError('to', 'the draft has no recipient');
      if (!draft.subject) throw validationError('subject', 'the draft has no subject');
      if (draft.text === null && draft.html === null) throw validationError('text', 'the draft has no text or html');
      let threading = { inReplyTo: null as string | null, references: [] as string[] };
      if (draft.thread_id && draft.reply_to_message_id) {
        const thread = await findThread(db, inbox.id, draft.thread_id);
        const original = thread ? await findThreadMessage(db, thread.id, draft.reply_to_message_id) : undefined;
        if (!original)
          throw new AppError('invalid_state', `The message draft ${draft.id} replies to is no longer in its thread`);
        threading = inboxReplies.threading(original);
      }
      const attachments = await listDraftAttachments(db, draft.id);
      return sendFromInbox(
        deps,
        workspace,
        caller,
        {
          inbox,
          threadId: draft.thread_id ?? undefined,
          to,
          cc: parseMailboxes('cc', draft.cc_addresses),
          bcc: parseMailboxes('bcc', draft.bcc_addresses),
          subject: draft.subject,
          text: draft.text ?? undefined,
          html: draft.html ?? undefined,
          headers,
          attachments: attachments.map((a) => ({
            filename: a.filename,
            content: Buffer.from(a.content).toString('base64'),
            contentType: a.content_type,
          })),
          ...threading,
        },
        async (trx: Db, result) => {
          // Sent once: a second send of the same draft, racing this one, finds it taken.
          if (!(await markDraftSent(trx, draft.id, result.id, clock.now())))
            throw new AppError('invalid_state', `Draft ${draft.id} was already sent`);
          await inTransaction?.(trx, result);
        },
      );
    },
  };
}
