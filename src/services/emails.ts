import { parsePage } from '../store/infra/list-page.js';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { isUuid } from '../shared/ids.js';
import type { Db } from '../store/infra/db.js';
import {
  cancelQueuedItems,
  countSubscriberEmails,
  findEmail,
  listAttemptsOfEmail,
  listEmails,
  listQueueItemsOfEmail,
  refreshEmailStatus,
  rescheduleEmail,
  EMAIL_STATUSES,
  type Email,
  type EmailStatus,
} from '../store/emails.js';
import { listEmailEvents, listEmailEventTypes } from '../store/events.js';
import type { ParsedMail } from 'mailparser';
import { parseMail } from '../shared/parse-mail.js';
import { signToken, tokenKey, verifyToken } from '../shared/signed-token.js';
import { sharedCopyHtml } from '../messages/shared-copy.js';
import type { ServiceDeps } from './deps.js';
import { SIMULATOR_HOST } from '../delivery/simulator.js';
import { isOneOf } from '../shared/one-of.js';

/** Resend's `last_event` vocabulary. */
type LastEvent =
  | 'bounced'
  | 'canceled'
  | 'clicked'
  | 'complained'
  | 'delivered'
  | 'delivery_delayed'
  | 'failed'
  | 'opened'
  | 'queued'
  | 'scheduled'
  | 'sent'
  | 'suppressed';

const LAST_EVENT_OF_STATUS: Record<EmailStatus, LastEvent> = {
  scheduled: 'scheduled',
  queued: 'queued',
  sending: 'queued',
  deferred: 'delivery_delayed',
  // Held by the reputation guard: still waiting in the queue.
  held: 'queued',
  delivered: 'delivered',
  bounced: 'bounced',
  failed: 'failed',
  cancelled: 'canceled',
  suppressed: 'suppressed',
};

const LAST_EVENT_OF_TYPE: Record<string, LastEvent> = {
  'email.sent': 'sent',
  'email.delivered': 'delivered',
  'email.delivery_delayed': 'delivery_delayed',
  'email.failed': 'failed',
  'email.opened': 'opened',
  'email.clicked': 'clicked',
  'email.bounced': 'bounced',
  'email.complained': 'complained',
  'email.suppressed': 'suppressed',
};

interface EmailSummary {
  object: 'email';
  id: string;
  status: EmailStatus;
  /** Resend's name for the state the email is in. */
  last_event: LastEvent;
  type: Email['type'];
  from: string;
  to: string[];
  cc: string[] | null;
  bcc: string[] | null;
  reply_to: string[] | null;
  subject: string;
  message_id: string;
  created_at: string;
  scheduled_at: string | null;
  test: boolean;
}

const emailSummary = (e: Email): EmailSummary => ({
  object: 'email',
  id: e.id,
  status: e.status,
  last_event: LAST_EVENT_OF_STATUS[e.status],
  type: e.type,
  from: e.from_header,
  to: e.to_addresses,
  cc: e.cc_addresses,
  bcc: e.bcc_addresses,
  reply_to: e.reply_to,
  subject: e.subject,
  message_id: e.message_id,
  created_at: toIso(e.created_at),
  scheduled_at: toIsoOrNull(e.scheduled_at),
  test: e.test,
});

interface EmailPage {
  object: 'list';
  has_more: boolean;
  next_cursor: string | null;
  data: EmailSummary[];
}

/**
 * `last_event` of emails that have events: the last of them in the order they were written;
 * the status tells the rest (queued, scheduled, cancelled).
 */
async function withLastEvents(db: Db, summaries: EmailSummary[]): Promise<EmailSummary[]> {
  const last = new Map<string, LastEvent>();
  for (const e of await listEmailEventTypes(
    db,
    summaries.map((s) => s.id),
    Object.keys(LAST_EVENT_OF_TYPE),
  ))
    last.set(e.email_id!, LAST_EVENT_OF_TYPE[e.type]!);
  return summaries.map((s) =>
    last.has(s.id) && !UNFINISHED.has(s.status) ? { ...s, last_event: last.get(s.id)! } : s,
  );
}

/** States no event records: a scheduled email's, a cancelled one's. */
const UNFINISHED = new Set<EmailStatus>(['scheduled', 'cancelled']);

interface EmailListQuery {
  limit?: unknown;
  after?: unknown;
  before?: unknown;
  status?: unknown;
  to?: unknown;
  /** Part of the subject, the From or a To address, or an email id. */
  q?: unknown;
  tag?: unknown;
  /** ISO 8601 date or time: created at or after. */
  created_after?: unknown;
  /** ISO 8601 date or time: created before. */
  created_before?: unknown;
  campaign_id?: unknown;
  subscriber_id?: unknown;
}

export interface EmailService {
  get(workspaceId: string, id: string): Promise<EmailDetail>;
  list(workspaceId: string, query: EmailListQuery): Promise<EmailPage>;
  events(
    workspaceId: string,
    id: string,
  ): Promise<Array<{ id: string; type: string; created_at: string; data: unknown }>>;
  /** The composed message as queued. */
  raw(workspaceId: string, id: string): Promise<Buffer>;
  /** A subscriber's emails by status, and how many were opened, clicked or complained about. */
  countsOfSubscriber(workspaceId: string, subscriberId: string): Promise<Record<string, number>>;
  /** Cancels every recipient not yet handed to a worker; 409 when nothing is left to cancel. */
  cancel(workspaceId: string, id: string): Promise<EmailDetail>;
  /** Moves a scheduled email to another time (null or past: now); 409 once it is no longer scheduled. */
  reschedule(workspaceId: string, id: string, at: number | null): Promise<EmailDetail>;
  /** The files attached to an email, each with a download link that works for an hour. */
  attachments(workspaceId: string, id: string): Promise<AttachmentView[]>;
  /** The file a download link names; a 404 for a link that is not genuine or has expired. */
  download(token: string): Promise<{ filename: string; contentType: string; content: Buffer }>;
  /** A public link to the rendered message that works for `expiresIn` ("30m", "24h", "7d"; default 24h, at most 30 days). */
  share(
    workspaceId: string,
    id: string,
    expiresIn: string | undefined,
  ): Promise<{ object: 'email'; id: string; url: string; expires_at: string }>;
  /** The message a share link names, for its page; a 404 for a link that is not genuine or has expired. */
  shared(token: string): Promise<SharedEmail>;
}

export interface SharedEmail {
  subject: string;
  from: string;
  to: string[];
  created_at: string;
  /** Without the tracking pixel, tracked links pointing at their destinations, no unsubscribe link. */
  html: string | null;
  text: string | null;
}

/** Where share links point (outside the API: the signed token is the credential). */
export const SHARE_PATH = '/s/';
const SHARE_DEFAULT = '24h';
const SHARE_MAX_MS = 30 * 24 * 3600 * 1000;
const DURATION_UNITS: Record<string, number> = { m: 60_000, h: 3600_000, d: 24 * 3600_000 };

interface ShareToken extends Record<string, unknown> {
  w: string;
  e: string;
  x: number;
}

/** "30m", "24h", "7d" in milliseconds; a validation error for anything else or over 30 days. */
function parseShareDuration(value: string): number {
  const m = /^(\d{1,5})\s*([mhd])$/.exec(value.trim());
  const ms = m ? Number(m[1]) * DURATION_UNITS[m[2]!]! : NaN;
  if (!(ms >= 60_000) || ms > SHARE_MAX_MS)
    throw validationError('expires_in', 'must be a duration from 1m to 30d, such as "30m", "24h" or "7d"');
  return ms;
}

interface AttachmentView {
  object: 'attachment';
  id: string;
  filename: string | undefined;
  size: number;
  content_type: string;
  content_disposition: 'inline' | 'attachment';
  content_id?: string;
  download_url: string;
  expires_at: string;
}

/** How long an attachment download link works. */
const DOWNLOAD_LINK_MS = 3600 * 1000;
/** Where the links point (outside the API: the signed token is the credential). */
export const DOWNLOAD_PATH = '/a/';
/** Furthest an email can be rescheduled, as when it is sent. */
const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

interface DownloadToken extends Record<string, unknown> {
  w: string;
  e: string;
  /** Position of the attachment in the message. */
  i: number;
  /** Expiry, epoch ms. */
  x: number;
}

export type EmailDetail = Awaited<ReturnType<typeof detail>>;

async function detail(db: Db, email: Email, content: ParsedMail | undefined) {
  const [items, attempts, events] = await Promise.all([
    listQueueItemsOfEmail(db, email.id),
    listAttemptsOfEmail(db, email.id),
    listEmailEvents(db, email.workspace_id, email.id),
  ]);
  const recipientOf = new Map(items.map((i) => [i.id, i.recipient]));
  const summary = emailSummary(email);
  const lastEvent = events
    .map((e) => LAST_EVENT_OF_TYPE[e.type])
    .filter((e) => e !== undefined)
    .at(-1);
  return {
    ...summary,
    last_event: lastEvent !== undefined && !UNFINISHED.has(email.status) ? lastEvent : summary.last_event,
    html: content && typeof content.html === 'string' ? content.html : null,
    text: content?.text ?? null,
    cc: email.cc_addresses ?? [],
    bcc: email.bcc_addresses ?? [],
    reply_to: email.reply_to ?? [],
    intake: email.intake,
    priority: email.priority === 0 ? 'transactional' : 'marketing',
    template_id: email.template_id,
    campaign_id: email.campaign_id,
    tags: email.tags ?? [],
    metadata: email.metadata,
    external_id: email.external_id,
    size: email.size,
    updated_at: toIso(email.updated_at),
    recipients: items.map((i) => ({
      email: i.recipient,
      status: i.status,
      attempts: i.attempts,
      next_attempt_at: i.finished_at === null ? toIso(i.next_attempt_at) : null,
      last_response:
        i.last_code === null && i.last_response === null ? null : { code: i.last_code, message: i.last_response },
      finished_at: toIsoOrNull(i.finished_at),
    })),
    attempts: attempts.map((a) => ({
      recipient: recipientOf.get(a.queue_item_id) ?? null,
      started_at: toIso(a.started_at),
      duration_ms: a.duration_ms,
      outcome: a.outcome,
      category: a.category,
      mx_host: a.mx_host,
      code: a.code,
      response: a.response,
      tls: a.tls,
      /** The simulator's answer (test keys, simulator addresses): no connection was made. */
      simulated: a.mx_host === SIMULATOR_HOST,
    })),
  };
}

/** An optional text filter: trimmed, empty is absent, one value of at most `max` characters. */
function text(field: string, value: unknown, max: number): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > max)
    throw validationError(field, `must be one text of at most ${max} characters`);
  return value.trim() === '' ? undefined : value.trim();
}

/** An optional id filter. */
function uuidParam(field: string, value: unknown): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !isUuid(value)) throw validationError(field, 'must be an id (uuid)');
  return value.toLowerCase();
}

/** An optional ISO 8601 date (midnight UTC) or date and time, as epoch ms. */
function instant(field: string, value: unknown): number | undefined {
  const given = text(field, value, 40);
  if (given === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(given)
    ? Date.parse(/T/.test(given) && !/(Z|[+-]\d{2}:?\d{2})$/.test(given) ? `${given}Z` : given)
    : NaN;
  if (Number.isNaN(ms))
    throw validationError(field, 'must be an ISO 8601 date (2024-06-01) or date and time (2024-06-01T12:00:00Z)');
  return ms;
}

export function createEmailService(
  deps: ServiceDeps & { contentFor: (email: Email) => Promise<Buffer | undefined> },
): EmailService {
  const { db, clock } = deps;
  const linkKey = tokenKey(deps.secretKey, 'attachment download');
  const shareKey = tokenKey(deps.secretKey, 'email share');

  /**
   * The message as composed, for reading back; none for the server's own mail (a team
   * invitation holds a one-time link that makes whoever opens it a member with the role it
   * names: anyone who may read the workspace's emails must not be able to take it).
   */
  const contentFor = async (email: Email): Promise<Buffer | undefined> =>
    email.intake === 'dashboard' ? undefined : deps.contentFor(email);

  /** The message as composed, parsed (undefined when it has no content yet, or none is shown). */
  const parsed = async (email: Email): Promise<ParsedMail | undefined> => {
    const raw = await contentFor(email);
    return raw
      ? parseMail(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true })
      : undefined;
  };

  const withDetail = async (email: Email) => detail(db, email, await parsed(email));

  const find = async (workspaceId: string, id: string): Promise<Email> => {
    const email = isUuid(id) ? await findEmail(db, workspaceId, id.toLowerCase()) : undefined;
    if (!email) throw notFound(`Email ${id}`);
    return email;
  };

  return {
    get: async (workspaceId, id) => withDetail(await find(workspaceId, id)),

    async list(workspaceId, query) {
      const { limit, after, before } = parsePage(query as Record<string, unknown>, 'keyset');
      let status: string | undefined;
      // Resend's spelling of the one status where the two differ.
      if (query.status === 'canceled') query = { ...query, status: 'cancelled' };
      if (query.status !== undefined && query.status !== '') {
        if (typeof query.status !== 'string' || !isOneOf(EMAIL_STATUSES, query.status)) {
          throw validationError('status', `must be one of ${EMAIL_STATUSES.join(', ')}`);
        }
        status = query.status;
      }
      const to = text('to', query.to, 320);
      const search = text('q', query.q, 320);
      const tag = text('tag', query.tag, 256);
      const createdFrom = instant('created_after', query.created_after);
      const createdUntil = instant('created_before', query.created_before);
      const campaignId = uuidParam('campaign_id', query.campaign_id);
      const subscriberId = uuidParam('subscriber_id', query.subscriber_id);
      const { rows, more } = await listEmails(db, {
        workspaceId,
        limit,
        after,
        before,
        status,
        to,
        search,
        tag,
        createdFrom,
        createdUntil,
        campaignId,
        subscriberId,
      });
      return {
        object: 'list',
        has_more: more,
        next_cursor: rows.at(-1)?.id ?? null,
        data: await withLastEvents(db, rows.map(emailSummary)),
      };
    },

    countsOfSubscriber: (workspaceId, subscriberId) => countSubscriberEmails(db, workspaceId, subscriberId),

    async raw(workspaceId, id) {
      const email = await find(workspaceId, id);
      const raw = await contentFor(email);
      if (!raw) throw notFound(`Content of email ${id}`);
      return raw;
    },

    async events(workspaceId, id) {
      const email = await find(workspaceId, id);
      const events = await listEmailEvents(db, workspaceId, email.id);
      return events.map((e) => ({ id: e.id, type: e.type, created_at: toIso(e.created_at), data: e.data }));
    },

    async cancel(workspaceId, id) {
      const email = await find(workspaceId, id);
      const cancelled = await db.transaction().execute(async (trx) => {
        const n = await cancelQueuedItems(trx, email.id, clock.now());
        if (n > 0) await refreshEmailStatus(trx, email.id, clock.now());
        return n;
      });
      if (cancelled === 0)
        throw new AppError('invalid_state', `Email ${email.id} is ${email.status}: nothing is left to cancel`);
      return withDetail((await findEmail(db, workspaceId, email.id))!);
    },

    async reschedule(workspaceId, id, at) {
      const email = await find(workspaceId, id);
      const now = clock.now();
      const when = at === null || at <= now ? null : at;
      if (when !== null && when > now + MAX_SCHEDULE_MS)
        throw validationError('scheduled_at', 'must be within 30 days');
      const moved = await db.transaction().execute((trx) => rescheduleEmail(trx, email.id, when, now));
      if (!moved)
        throw new AppError(
          'invalid_state',
          `Email ${email.id} is ${email.status}: only a scheduled email can be rescheduled`,
        );
      return withDetail((await findEmail(db, workspaceId, email.id))!);
    },

    async attachments(workspaceId, id) {
      const email = await find(workspaceId, id);
      const content = await parsed(email);
      const expires = clock.now() + DOWNLOAD_LINK_MS;
      return (content?.attachments ?? []).map((a, i) => ({
        object: 'attachment',
        id: `att_${i + 1}`,
        filename: a.filename,
        size: a.size,
        content_type: a.contentType,
        content_disposition: a.contentDisposition === 'inline' ? 'inline' : 'attachment',
        ...(a.cid ? { content_id: a.cid } : {}),
        download_url: `${deps.config.http.publicUrl}${DOWNLOAD_PATH}${signToken(linkKey, { w: workspaceId, e: email.id, i, x: expires } satisfies DownloadToken)}`,
        expires_at: toIso(expires),
      }));
    },

    async share(workspaceId, id, expiresIn) {
      const email = await find(workspaceId, id);
      const expires = clock.now() + parseShareDuration(expiresIn ?? SHARE_DEFAULT);
      const token = signToken(shareKey, { w: workspaceId, e: email.id, x: expires } satisfies ShareToken);
      return {
        object: 'email',
        id: email.id,
        url: `${deps.config.http.publicUrl}${SHARE_PATH}${token}`,
        expires_at: toIso(expires),
      };
    },

    async shared(token) {
      const p = verifyToken<ShareToken>(shareKey, token);
      if (!p || typeof p.w !== 'string' || typeof p.e !== 'string' || typeof p.x !== 'number' || p.x < clock.now()) {
        throw notFound('This link is not valid or has expired');
      }
      const email = await find(p.w, p.e);
      const content = await parsed(email);
      const html =
        content && typeof content.html === 'string'
          ? sharedCopyHtml(content.html, deps.config.http.publicUrl, deps.links)
          : null;
      return {
        subject: email.subject,
        from: email.from_header,
        to: email.to_addresses,
        created_at: toIso(email.created_at),
        html,
        text: content?.text ?? null,
      };
    },

    async download(token) {
      const payload = verifyToken<DownloadToken>(linkKey, token);
      if (
        !payload ||
        typeof payload.e !== 'string' ||
        typeof payload.w !== 'string' ||
        typeof payload.i !== 'number' ||
        typeof payload.x !== 'number' ||
        payload.x < clock.now()
      ) {
        throw notFound('This download link is not valid or has expired; list the attachments again for a new one');
      }
      const email = await find(payload.w, payload.e);
      const attachment = (await parsed(email))?.attachments[payload.i];
      if (!attachment) throw notFound('Attachment');
      return {
        filename: attachment.filename ?? `attachment-${payload.i + 1}`,
        contentType: attachment.contentType,
        content: attachment.content,
      };
    },
  };
}
