import { toIso, toIsoOrNull } from '../shared/clock.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { isUuid } from '../shared/ids.js';
import type { Db } from '../store/db.js';
import {
  cancelQueuedItems,
  findEmail,
  listAttemptsOfEmail,
  listEmails,
  listQueueItemsOfEmail,
  refreshEmailStatus,
} from '../store/emails.js';
import { listEmailEvents } from '../store/events.js';
import { EMAIL_STATUSES, type Email, type EmailStatus } from '../store/tables.js';
import type { ServiceDeps } from './deps.js';

const parseJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

export interface EmailSummary {
  object: 'email';
  id: string;
  status: EmailStatus;
  type: Email['type'];
  from: string;
  to: string[];
  subject: string;
  created_at: string;
  scheduled_at: string | null;
  test: boolean;
}

export const emailSummary = (e: Email): EmailSummary => ({
  object: 'email',
  id: e.id,
  status: e.status,
  type: e.type,
  from: e.from_header,
  to: JSON.parse(e.to_addresses) as string[],
  subject: e.subject,
  created_at: toIso(e.created_at),
  scheduled_at: toIsoOrNull(e.scheduled_at),
  test: e.test === 1,
});

export interface EmailPage {
  object: 'list';
  has_more: boolean;
  next_cursor: string | null;
  data: EmailSummary[];
}

/** Keyset list limits: SPEC clamps to 100; a missing or unusable limit is the default 20. */
export const EMAIL_PAGE_DEFAULT = 20;
export const EMAIL_PAGE_MAX = 100;

export interface EmailService {
  get(workspaceId: string, id: string): Promise<EmailDetail>;
  list(workspaceId: string, query: { limit?: unknown; after?: unknown; before?: unknown; status?: unknown; to?: unknown }): Promise<EmailPage>;
  events(workspaceId: string, id: string): Promise<Array<{ id: string; type: string; created_at: string; data: unknown }>>;
  /** The composed message as queued. */
  raw(workspaceId: string, id: string): Promise<Buffer>;
  /** Cancels every recipient not yet handed to a worker; 409 when nothing is left to cancel. */
  cancel(workspaceId: string, id: string): Promise<EmailDetail>;
}

export type EmailDetail = Awaited<ReturnType<typeof detail>>;

async function detail(db: Db, email: Email) {
  const [items, attempts] = await Promise.all([listQueueItemsOfEmail(db, email.id), listAttemptsOfEmail(db, email.id)]);
  const recipientOf = new Map(items.map((i) => [i.id, i.recipient]));
  return {
    ...emailSummary(email),
    cc: parseJson<string[]>(email.cc_addresses) ?? [],
    bcc: parseJson<string[]>(email.bcc_addresses) ?? [],
    reply_to: parseJson<string[]>(email.reply_to) ?? [],
    message_id: email.message_id,
    intake: email.intake,
    priority: email.priority === 0 ? 'transactional' : 'marketing',
    template_id: email.template_id,
    campaign_id: email.campaign_id,
    tags: parseJson<string[]>(email.tags) ?? [],
    metadata: parseJson<Record<string, unknown>>(email.metadata),
    external_id: email.external_id,
    size: email.size,
    updated_at: toIso(email.updated_at),
    recipients: items.map((i) => ({
      email: i.recipient,
      status: i.status,
      attempts: i.attempts,
      next_attempt_at: i.finished_at === null ? toIso(i.next_attempt_at) : null,
      last_response: i.last_code === null && i.last_response === null ? null : { code: i.last_code, message: i.last_response },
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
      tls: a.tls === 1,
    })),
  };
}

const intParam = (value: unknown): number | null => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : null);

export function createEmailService(deps: ServiceDeps & { contentFor: (email: Email) => Promise<Buffer | undefined> }): EmailService {
  const { db, clock } = deps;

  const find = async (workspaceId: string, id: string): Promise<Email> => {
    const email = isUuid(id) ? await findEmail(db, workspaceId, id.toLowerCase()) : undefined;
    if (!email) throw notFound(`Email ${id}`);
    return email;
  };

  const cursor = (field: string, value: unknown): string | undefined => {
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string' || !isUuid(value)) throw validationError(field, 'must be an email id');
    return value.toLowerCase();
  };

  return {
    get: async (workspaceId, id) => detail(db, await find(workspaceId, id)),

    async list(workspaceId, query) {
      const requested = intParam(query.limit);
      const limit = requested === null || requested < 1 ? EMAIL_PAGE_DEFAULT : Math.min(requested, EMAIL_PAGE_MAX);
      const after = cursor('after', query.after);
      const before = cursor('before', query.before);
      if (after && before) throw validationError('before', 'cannot be combined with after');
      let status: string | undefined;
      if (query.status !== undefined && query.status !== '') {
        if (typeof query.status !== 'string' || !(EMAIL_STATUSES as readonly string[]).includes(query.status)) {
          throw validationError('status', `must be one of ${EMAIL_STATUSES.join(', ')}`);
        }
        status = query.status;
      }
      if (query.to !== undefined && (typeof query.to !== 'string' || query.to.length > 320)) throw validationError('to', 'must be one text of at most 320 characters');
      const to = typeof query.to === 'string' && query.to.trim() !== '' ? query.to.trim() : undefined;
      const { rows, more } = await listEmails(db, { workspaceId, limit, after, before, status, to });
      return { object: 'list', has_more: more, next_cursor: rows.at(-1)?.id ?? null, data: rows.map(emailSummary) };
    },

    async raw(workspaceId, id) {
      const email = await find(workspaceId, id);
      const raw = await deps.contentFor(email);
      if (!raw) throw notFound(`Content of email ${id}`);
      return raw;
    },

    async events(workspaceId, id) {
      const email = await find(workspaceId, id);
      const events = await listEmailEvents(db, workspaceId, email.id);
      return events.map((e) => ({ id: e.id, type: e.type, created_at: toIso(e.created_at), data: JSON.parse(e.data) as unknown }));
    },

    async cancel(workspaceId, id) {
      const email = await find(workspaceId, id);
      const cancelled = await db.transaction().execute(async (trx) => {
        const n = await cancelQueuedItems(trx, email.id, clock.now());
        if (n > 0) await refreshEmailStatus(trx, email.id, clock.now());
        return n;
      });
      if (cancelled === 0) throw new AppError('invalid_state', `Email ${email.id} is ${email.status}: nothing is left to cancel`);
      return detail(db, (await findEmail(db, workspaceId, email.id))!);
    },
  };
}
