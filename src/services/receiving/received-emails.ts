import { notFound } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { findEmailById, listEmailsByIds } from '../../store/emails.js';
import {
  findReceivedEmail,
  findReceivedEmailBody,
  findReceivedRaw,
  listReceivedEmails,
  type ReceivedEmail,
} from '../../store/receiving.js';
import type { ServiceDeps } from '../deps.js';
import { parsePage } from '../../store/infra/list-page.js';
import { readAttachment } from '../../receiving/routes/parse-inbound.js';
import { receivedLinks, RECEIVED_DOWNLOAD_PATH } from '../../receiving/routes/received-links.js';
import {
  attachmentView,
  receivedDetail,
  receivedSummary,
  type ViewContext,
} from '../../receiving/routes/received-view.js';

type ReceivedDetail = ReturnType<typeof receivedDetail>;
type ReceivedAttachment = ReturnType<typeof attachmentView>;

interface ReceivedPage {
  object: 'list';
  has_more: boolean;
  next_cursor: string | null;
  data: Array<ReturnType<typeof receivedSummary>>;
}

interface AttachmentContent {
  filename: string | null;
  contentType: string;
  content: Buffer;
}

/** Reading received messages: the list, one message, its raw source and its attachments. */
export interface ReceivedEmailService {
  list(workspaceId: string, query: { limit?: unknown; after?: unknown; before?: unknown }): Promise<ReceivedPage>;
  get(workspaceId: string, id: string): Promise<ReceivedDetail>;
  raw(workspaceId: string, id: string): Promise<Buffer>;
  attachments(workspaceId: string, id: string): Promise<ReceivedAttachment[]>;
  attachment(workspaceId: string, id: string, attachmentId: string): Promise<ReceivedAttachment>;
  attachmentContent(workspaceId: string, id: string, attachmentId: string): Promise<AttachmentContent>;
  /** The part a signed download link names (raw source or attachment); a 404 for a link that is not genuine or has expired. */
  download(token: string): Promise<AttachmentContent>;
}

export { RECEIVED_DOWNLOAD_PATH };

export function createReceivedEmailService(deps: ServiceDeps): ReceivedEmailService {
  const { db, config } = deps;
  const view: ViewContext = {
    links: receivedLinks(deps.secretKey, config.http.publicUrl, deps.clock, config.retention.days),
  };

  const find = async (workspaceId: string, id: string): Promise<ReceivedEmail> => {
    const email = isUuid(id) ? await findReceivedEmail(db, workspaceId, id.toLowerCase()) : undefined;
    if (!email) throw notFound(`Received email ${id}`);
    return email;
  };

  const findAttachment = async (workspaceId: string, id: string, attachmentId: string) => {
    const email = await find(workspaceId, id);
    const stored = email.attachments.find((a) => a.id === attachmentId.toLowerCase());
    if (!stored) throw notFound(`Attachment ${attachmentId} of received email ${id}`);
    return { email, stored };
  };

  return {
    async list(workspaceId, query) {
      const { limit, after, before } = parsePage(query, 'keyset');
      const { rows, more } = await listReceivedEmails(db, { workspaceId, limit, after, before });
      const replied = new Map(
        (
          await listEmailsByIds(db, [
            ...new Set(rows.flatMap((r) => (r.in_reply_to_email_id ? [r.in_reply_to_email_id] : []))),
          ])
        ).map((e) => [e.id, e]),
      );
      return {
        object: 'list',
        has_more: more,
        next_cursor: rows.at(-1)?.id ?? null,
        data: rows.map((r) =>
          receivedSummary(view, r, r.in_reply_to_email_id ? replied.get(r.in_reply_to_email_id) : undefined),
        ),
      };
    },

    async get(workspaceId, id) {
      const email = await find(workspaceId, id);
      const [content, replied] = await Promise.all([
        findReceivedEmailBody(db, email.id),
        email.in_reply_to_email_id ? findEmailById(db, email.in_reply_to_email_id) : undefined,
      ]);
      return receivedDetail(view, email, content, replied);
    },

    async raw(workspaceId, id) {
      const email = await find(workspaceId, id);
      const raw = await findReceivedRaw(db, email.id);
      if (!raw) throw notFound(`Raw source of received email ${id}`);
      return raw;
    },

    async attachments(workspaceId, id) {
      const email = await find(workspaceId, id);
      return email.attachments.map((a) => attachmentView(view, email, a));
    },

    async attachment(workspaceId, id, attachmentId) {
      const { email, stored } = await findAttachment(workspaceId, id, attachmentId);
      return attachmentView(view, email, stored);
    },

    async attachmentContent(workspaceId, id, attachmentId) {
      const { email, stored } = await findAttachment(workspaceId, id, attachmentId);
      const raw = await findReceivedRaw(db, email.id);
      const content = raw ? await readAttachment(raw, stored.position) : undefined;
      if (!content) throw notFound(`Content of attachment ${attachmentId}`);
      return { filename: stored.filename, contentType: stored.content_type, content };
    },

    async download(token) {
      const named = view.links.read(token);
      if (!named)
        throw notFound('This download link is not valid or has expired; read the message again for a new one');
      if (named.part !== 'raw') return this.attachmentContent(named.workspaceId, named.emailId, named.part);
      return {
        filename: `${named.emailId}.eml`,
        contentType: 'message/rfc822',
        content: await this.raw(named.workspaceId, named.emailId),
      };
    },
  };
}
