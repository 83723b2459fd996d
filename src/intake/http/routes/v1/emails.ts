import { z } from 'zod';
import { AppError, isAppError, validationError } from '../../../../shared/errors.js';
import type { Db } from '../../../../store/db.js';
import { EMAIL_STATUSES } from '../../../../store/tables.js';
import { EMAIL_PAGE_DEFAULT, EMAIL_PAGE_MAX } from '../../../../services/emails.js';
import { parseMailbox, parseMailboxes } from '../../../../services/send/addresses.js';
import { MAX_BATCH, type SendInput, type SendOutcome, type SendResult } from '../../../../services/send/send-email.js';
import type { Ctx } from '../../context.js';
import { setRateLimitHeaders } from '../../rate-limit.js';
import { defineRoute, type HandlerInput } from '../../route.js';

const addresses = z.union([z.string(), z.array(z.string()).max(50)]);
const metadata = z.record(z.string(), z.unknown());
const variables = z.record(z.string(), z.unknown());

/** Attachments as Resend users write them (`path`, `content_type`) or as the legacy API does (`url`, `contentType`). */
export const attachmentSchema = z
  .object({
    filename: z.string(),
    content: z.string().optional(),
    url: z.string().optional(),
    path: z.string().optional(),
    contentType: z.string().optional(),
    content_type: z.string().optional(),
    cid: z.string().optional(),
  })
  .transform((a, ctx) => {
    const contentType = a.contentType ?? a.content_type;
    if (contentType === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is required', path: ['contentType'] });
      return z.NEVER;
    }
    return { filename: a.filename, content: a.content, url: a.url ?? a.path, contentType, cid: a.cid };
  });

const tag = z.union([z.string(), z.object({ name: z.string(), value: z.string().optional() })]);

const emailFields = {
  from: z.string(),
  subject: z.string().optional(),
  html: z.string().optional(),
  text: z.string().optional(),
  cc: addresses.optional(),
  bcc: addresses.optional(),
  reply_to: addresses.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  tags: z.array(tag).max(50).optional(),
  attachments: z.array(attachmentSchema).max(50).optional(),
  scheduled_at: z.string().optional(),
  template_id: z.string().optional(),
  variables: variables.optional(),
  type: z.enum(['transactional', 'marketing']).optional(),
  track_opens: z.boolean().optional(),
  track_clicks: z.boolean().optional(),
  metadata: metadata.optional(),
  external_id: z.string().optional(),
};

export const sendEmailBody = z.object({
  ...emailFields,
  to: addresses.optional(),
  /** One template (or body) to many: each recipient with its own variables. */
  recipients: z
    .array(z.object({ to: addresses, cc: addresses.optional(), bcc: addresses.optional(), variables: variables.optional() }))
    .min(1)
    .max(MAX_BATCH)
    .optional(),
});
export const batchEmailBody = z.array(z.object({ ...emailFields, to: addresses })).max(MAX_BATCH);

type EmailBody = z.infer<typeof sendEmailBody>;

/** Keyset pagination of the email log; the service parses the values (query strings). */
const emailListQuery = z.looseObject({
  limit: z.string().optional().describe(`Emails per page, 1 to ${EMAIL_PAGE_MAX} (default ${EMAIL_PAGE_DEFAULT})`),
  after: z.string().optional().describe('An email id: the page of emails older than it (next_cursor of the previous page)'),
  before: z.string().optional().describe('An email id: the page of emails newer than it'),
  status: z.union([z.enum(EMAIL_STATUSES), z.literal('')], { error: `must be one of ${EMAIL_STATUSES.join(', ')}` }).optional(),
  to: z.string().optional().describe('Part of a recipient address, matched without regard to case (at most 320 characters)'),
});

function parseScheduledAt(value: string | undefined): number | null {
  if (value === undefined) return null;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(ms)) throw validationError('scheduled_at', 'must be an ISO 8601 date-time, e.g. 2026-12-01T09:00:00Z');
  return ms;
}

const tagStrings = (tags: EmailBody['tags']): string[] | undefined =>
  tags?.map((t) => (typeof t === 'string' ? t : t.value === undefined ? t.name : `${t.name}:${t.value}`));

/** The versioned body, in the send service's canonical shape. */
export function toSendInput(body: EmailBody, to: string | string[], test: boolean, overrides: Partial<SendInput> = {}): SendInput {
  return {
    intake: 'v1',
    test,
    from: parseMailbox('from', body.from),
    to: parseMailboxes('to', to),
    cc: parseMailboxes('cc', body.cc),
    bcc: parseMailboxes('bcc', body.bcc),
    replyTo: parseMailboxes('reply_to', body.reply_to),
    subject: body.subject,
    html: body.html,
    text: body.text,
    templateId: body.template_id,
    variables: body.variables,
    headers: body.headers,
    attachments: body.attachments,
    tags: tagStrings(body.tags),
    metadata: body.metadata,
    externalId: body.external_id,
    type: body.type ?? 'transactional',
    scheduledAt: parseScheduledAt(body.scheduled_at),
    trackOpens: body.track_opens,
    trackClicks: body.track_clicks,
    ...overrides,
  };
}

/** Shows the send rate limit that applied in the X-RateLimit-* headers. */
const withLimitHeaders = (ctx: Ctx, outcome: SendOutcome) => {
  setRateLimitHeaders(ctx, outcome.limit);
  return outcome.results.map((r) => ({ id: r.id, status: r.status }));
};

/** Builds each message's input; a failure names the message's index, as the service does. */
export function eachIndexed<T, R>(items: T[], build: (item: T) => R): R[] {
  return items.map((item, i) => {
    try {
      return build(item);
    } catch (err) {
      if (isAppError(err) && err.field !== undefined) throw new AppError(err.code, `[${i}].${err.message}`, { field: `[${i}].${err.field}` });
      throw err;
    }
  });
}

async function sendList(input: HandlerInput<unknown, unknown>, inputs: SendInput[], single: boolean) {
  const { deps, workspace, ctx, idempotency } = input;
  const render = (results: Array<{ id: string; status: string }>) => (single ? results[0]! : { data: results });
  const options = {
    inTransaction: idempotency ? (trx: Db, results: SendResult[]) => idempotency.complete(200, render(results.map(({ id, status }) => ({ id, status }))), trx) : undefined,
  };
  const outcome = single ? await deps.services.send.send(workspace, inputs[0]!, options) : await deps.services.send.sendMany(workspace, inputs, options);
  return render(withLimitHeaders(ctx, outcome));
}

export const v1EmailRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/emails',
    summary: 'Send one message, or one template to many recipients (`recipients`)',
    operation: null,
    scope: 'emails:write',
    idempotent: true,
    body: sendEmailBody,
    handler: async (input) => {
      const { body, principal } = input;
      const test = principal.kind === 'test';
      if (body.recipients) {
        if (body.to !== undefined) throw validationError('to', 'cannot be combined with recipients');
        const inputs = eachIndexed(body.recipients, (r) =>
          toSendInput(body, r.to, test, {
            cc: parseMailboxes('cc', r.cc ?? body.cc),
            bcc: parseMailboxes('bcc', r.bcc ?? body.bcc),
            variables: { ...body.variables, ...r.variables },
          }),
        );
        return sendList(input, inputs, false);
      }
      if (body.to === undefined) throw validationError('to', 'is required');
      return sendList(input, [toSendInput(body, body.to, test)], true);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/emails/batch',
    summary: `Send up to ${MAX_BATCH} messages at once; all are validated before any is queued`,
    operation: null,
    scope: 'emails:write',
    idempotent: true,
    body: batchEmailBody,
    handler: async (input) => {
      const test = input.principal.kind === 'test';
      return sendList(input, eachIndexed(input.body, (b) => toSendInput(b, b.to, test)), false);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails',
    summary: 'List emails, newest first, with keyset pagination (limit, after, before), by status or recipient (to)',
    operation: 'api',
    scope: 'emails:read',
    query: emailListQuery,
    handler: ({ deps, workspace, query }) => deps.services.emails.list(workspace.id, query),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/:id',
    summary: 'Read one email: status, recipients, delivery attempts',
    operation: 'api',
    scope: 'emails:read',
    handler: ({ deps, workspace, params }) => deps.services.emails.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/:id/events',
    summary: "The email's events, oldest first",
    operation: 'api',
    scope: 'emails:read',
    handler: async ({ deps, workspace, params }) => ({ events: await deps.services.emails.events(workspace.id, params.id!) }),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/emails/:id/cancel',
    summary: 'Cancel a scheduled or queued email (recipients not yet being delivered)',
    operation: 'api',
    scope: 'emails:write',
    handler: ({ deps, workspace, params }) => deps.services.emails.cancel(workspace.id, params.id!),
  }),
];

export const v1EmailContentRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/emails/:id/raw',
    summary: 'The message as queued (message/rfc822, before DKIM signing)',
    operation: 'api',
    scope: 'emails:read',
    responseType: 'message/rfc822',
    handler: ({ deps, workspace, params }) => deps.services.emails.raw(workspace.id, params.id!),
  }),
];
