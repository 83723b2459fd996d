import { z } from 'zod';
import { AppError, isAppError, notFound, validationError } from '../../../../shared/errors.js';
import { cursorList } from '../../pagination.js';
import { parseScheduledAt } from '../../schedule.js';
import type { Db } from '../../../../store/infra/db.js';
import { EMAIL_STATUSES } from '../../../../store/emails.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../../../store/infra/list-page.js';
import { parseMailbox, parseMailboxes } from '../../../../messages/addresses.js';
import { MAX_BATCH } from '../../../../services/send/send-email.js';
import type { SendInput, SendOutcome, SendResult } from '../../../../services/send/send-input.js';
import type { Ctx } from '../../context.js';
import { setRateLimitHeaders } from '../../rate-limit.js';
import { defineRoute, type HandlerInput } from '../../route.js';

const addresses = z.union([z.string(), z.array(z.string()).max(50)]);
const metadata = z.record(z.string(), z.unknown());
const variables = z.record(z.string(), z.unknown());

/**
 * Attachments of the legacy API (SPEC: `filename`, `contentType` and `content` or `url`);
 * Resend's spellings `path` and `content_type` are accepted as well.
 */
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

/** The last segment of an attachment URL's path: the file name Resend uses when none is given. */
const fileNameOf = (url: string): string | undefined => {
  if (!URL.canParse(url)) return undefined;
  const last = new URL(url).pathname.split('/').pop();
  try {
    return last ? decodeURIComponent(last) : undefined;
  } catch {
    return last;
  }
};

/**
 * Attachments on /v1, as Resend takes them: `content` (base64) or `path` (a URL; also `url`),
 * `filename` (from the URL when absent), `content_type` (also `contentType`; inferred from the
 * file name when absent) and `content_id` (also `cid`) for inline images.
 */
export const v1AttachmentSchema = z
  .object({
    filename: z.union([z.string(), z.literal(false)]).optional(),
    content: z.string().optional(),
    url: z.string().optional(),
    path: z.string().optional(),
    contentType: z.string().optional(),
    content_type: z.string().optional(),
    cid: z.string().optional(),
    content_id: z.string().optional(),
  })
  .transform((a, ctx) => {
    const url = a.url ?? a.path;
    const filename = typeof a.filename === 'string' ? a.filename : url !== undefined ? fileNameOf(url) : undefined;
    if (filename === undefined) {
      ctx.addIssue({ code: 'custom', message: 'is required (unless path names the file)', path: ['filename'] });
      return z.NEVER;
    }
    return {
      filename,
      content: a.content,
      url,
      contentType: a.contentType ?? a.content_type,
      cid: a.cid ?? a.content_id,
    };
  });

const tag = z.union([z.string(), z.object({ name: z.string(), value: z.string().optional() })]);

const emailFields = {
  from: z.string().optional(),
  subject: z.string().optional(),
  html: z.string().optional(),
  text: z.string().optional(),
  cc: addresses.optional(),
  bcc: addresses.optional(),
  reply_to: addresses.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  tags: z.array(tag).max(50).optional(),
  attachments: z.array(v1AttachmentSchema).max(50).optional(),
  scheduled_at: z.string().optional(),
  template_id: z.string().optional(),
  /** Resend's form of template_id and variables. */
  template: z.object({ id: z.string(), variables: variables.optional() }).optional(),
  variables: variables.optional(),
  /** Resend's topics apply to broadcasts here; on an email they are refused (see docs). */
  topic_id: z.string().nullable().optional(),
  type: z.enum(['transactional', 'marketing']).optional(),
  track_opens: z.boolean().optional(),
  track_clicks: z.boolean().optional(),
  metadata: metadata.optional(),
  external_id: z.string().optional(),
  /** The IP pool it leaves through (a pool's name); else its domain's, its workspace's, the default. */
  ip_pool: z.string().max(100).optional(),
};

const sendEmailBody = z.object({
  ...emailFields,
  to: addresses.optional(),
  /** One template (or body) to many: each recipient with its own variables. */
  recipients: z
    .array(
      z.object({ to: addresses, cc: addresses.optional(), bcc: addresses.optional(), variables: variables.optional() }),
    )
    .min(1)
    .max(MAX_BATCH)
    .optional(),
});
const batchEmailBody = z.array(z.object({ ...emailFields, to: addresses })).max(MAX_BATCH);

type EmailBody = z.infer<typeof sendEmailBody>;

/** Keyset pagination of the email log; the service parses the values (query strings). */
const emailListQuery = z.looseObject({
  limit: z.string().optional().describe(`Emails per page, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`),
  after: z
    .string()
    .optional()
    .describe('An email id: the page of emails older than it (next_cursor of the previous page)'),
  before: z.string().optional().describe('An email id: the page of emails newer than it'),
  status: z
    .union([z.enum(EMAIL_STATUSES), z.literal('canceled'), z.literal('')], {
      error: `must be one of ${EMAIL_STATUSES.join(', ')}`,
    })
    .optional()
    .describe("Only emails in this status (`canceled`, Resend's spelling, is taken for `cancelled`)"),
  to: z
    .string()
    .optional()
    .describe('Part of a recipient address, matched without regard to case (at most 320 characters)'),
  q: z
    .string()
    .optional()
    .describe(
      'Part of the subject, the From or a To address, without regard to case, or an email id (at most 320 characters)',
    ),
  tag: z.string().optional().describe('A tag (`name:value`), or a tag name with any value'),
  created_after: z
    .string()
    .optional()
    .describe('Created at or after this ISO 8601 date (midnight UTC) or date and time'),
  created_before: z.string().optional().describe('Created before this ISO 8601 date (midnight UTC) or date and time'),
  campaign_id: z.string().optional().describe('Only the messages of this campaign (broadcast)'),
  subscriber_id: z
    .string()
    .optional()
    .describe('Only the messages to this subscriber (contact) from campaigns and workflows'),
});

const tagStrings = (tags: EmailBody['tags']): string[] | undefined =>
  tags?.map((t) => (typeof t === 'string' ? t : t.value === undefined ? t.name : `${t.name}:${t.value}`));

/** What the send path needs to know about the caller. */
interface Caller {
  test: boolean;
  /** The key may send from this domain only. */
  senderDomainId: string | null;
  now: number;
}

const callerOf = ({ principal, deps }: HandlerInput<unknown, unknown>): Caller => ({
  test: principal.kind === 'test',
  senderDomainId: principal.domainId,
  now: deps.clock.now(),
});

/** The versioned body, in the send service's canonical shape. */
export function toSendInput(
  body: EmailBody,
  to: string | string[],
  caller: Caller,
  overrides: Partial<SendInput> = {},
): SendInput {
  if (body.template !== undefined && body.template_id !== undefined && body.template.id !== body.template_id)
    throw validationError('template', 'give template or template_id, not both');
  const templateId = body.template?.id ?? body.template_id;
  if (body.from === undefined && templateId === undefined) throw validationError('from', 'is required');
  if (body.topic_id != null)
    throw validationError(
      'topic_id',
      'topics apply to broadcasts; send to a topic with POST /v1/broadcasts and topic_id',
    );
  return {
    intake: 'v1',
    test: caller.test,
    senderDomainId: caller.senderDomainId,
    from: body.from === undefined ? null : parseMailbox('from', body.from),
    to: parseMailboxes('to', to),
    cc: parseMailboxes('cc', body.cc),
    bcc: parseMailboxes('bcc', body.bcc),
    replyTo: body.reply_to === undefined ? undefined : parseMailboxes('reply_to', body.reply_to),
    subject: body.subject,
    html: body.html,
    text: body.text,
    templateId,
    variables:
      body.template?.variables !== undefined ? { ...body.variables, ...body.template.variables } : body.variables,
    headers: body.headers,
    attachments: body.attachments,
    tags: tagStrings(body.tags),
    metadata: body.metadata,
    externalId: body.external_id,
    type: body.type ?? 'transactional',
    scheduledAt: parseScheduledAt(body.scheduled_at, caller.now),
    trackOpens: body.track_opens,
    trackClicks: body.track_clicks,
    ipPool: body.ip_pool,
    ...overrides,
  };
}

/** Shows the send rate limit that applied in the X-RateLimit-* headers. */
const withLimitHeaders = (ctx: Ctx, outcome: SendOutcome) => {
  setRateLimitHeaders(ctx, outcome.limit);
  return outcome.results.map((r) => ({ id: r.id, status: r.status }));
};

/** An error about message `i` of a list, named as the service names it: `[i].field: …`. */
const atIndex = (i: number, err: unknown): unknown =>
  isAppError(err) && err.field !== undefined
    ? new AppError(err.code, `[${i}].${err.message}`, { field: `[${i}].${err.field}` })
    : err;

/** Builds each message's input; a failure names the message's index, as the service does. */
function eachIndexed<T, R>(items: T[], build: (item: T) => R): R[] {
  return items.map((item, i) => {
    try {
      return build(item);
    } catch (err) {
      throw atIndex(i, err);
    }
  });
}

type Refused = NonNullable<SendOutcome['errors']>;

/**
 * Queues the messages and renders the answer (stored for idempotency in the same
 * transaction). `permissive`: Resend's batch mode, whose answer lists the messages refused
 * (`refused` turns the service's list into positions in the request).
 */
async function sendList(
  input: HandlerInput<unknown, unknown>,
  inputs: SendInput[],
  single: boolean,
  permissive?: (errors: Refused) => Refused,
) {
  const { deps, workspace, ctx, idempotency } = input;
  const render = (results: Array<{ id: string; status: string }>, errors?: SendOutcome['errors']) =>
    single ? results[0]! : { data: results, ...(permissive ? { errors: permissive(errors ?? []) } : {}) };
  const options = {
    permissive: permissive !== undefined,
    inTransaction: idempotency
      ? (trx: Db, results: SendResult[], errors?: SendOutcome['errors']) =>
          idempotency.complete(
            200,
            render(
              results.map(({ id, status }) => ({ id, status })),
              errors,
            ),
            trx,
          )
      : undefined,
  };
  const outcome = single
    ? await deps.services.send.send(workspace, inputs[0]!, options)
    : await deps.services.send.sendMany(workspace, inputs, options);
  return render(withLimitHeaders(ctx, outcome), outcome.errors);
}

export const v1EmailRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/emails',
    summary: 'Send one message, or one template to many recipients (`recipients`)',
    operation: null,
    scope: 'emails:send',
    idempotent: true,
    body: sendEmailBody,
    handler: async (input) => {
      const { body } = input;
      const caller = callerOf(input);
      if (body.recipients) {
        if (body.to !== undefined) throw validationError('to', 'cannot be combined with recipients');
        const inputs = eachIndexed(body.recipients, (r) =>
          toSendInput(body, r.to, caller, {
            cc: parseMailboxes('cc', r.cc ?? body.cc),
            bcc: parseMailboxes('bcc', r.bcc ?? body.bcc),
            variables: { ...body.variables, ...r.variables },
          }),
        );
        return sendList(input, inputs, false);
      }
      if (body.to === undefined) throw validationError('to', 'is required');
      return sendList(input, [toSendInput(body, body.to, caller)], true);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/emails/batch',
    summary: `Send up to ${MAX_BATCH} messages at once; all are validated before any is queued (with \`x-batch-validation: permissive\`, the valid ones are queued and the others listed in \`errors\`)`,
    operation: null,
    scope: 'emails:send',
    idempotent: true,
    body: batchEmailBody,
    handler: async (input) => {
      const caller = callerOf(input);
      const mode = input.ctx.get('x-batch-validation') || 'strict';
      if (mode !== 'strict' && mode !== 'permissive')
        throw validationError('x-batch-validation', 'must be strict or permissive');
      if (mode === 'strict')
        return sendList(
          input,
          eachIndexed(input.body, (b) => toSendInput(b, b.to, caller)),
          false,
        );
      // Permissive: a message the adapter cannot even read is refused like one the service refuses.
      const inputs: SendInput[] = [];
      const unreadable: Array<{ index: number; message: string; error: unknown }> = [];
      input.body.forEach((b, index) => {
        try {
          inputs.push(toSendInput(b, b.to, caller));
        } catch (err) {
          if (!isAppError(err)) throw err;
          unreadable.push({ index, message: err.message, error: atIndex(index, err) });
        }
      });
      if (inputs.length === 0) throw unreadable[0]!.error;
      const positions = input.body.map((_, i) => i).filter((i) => !unreadable.some((u) => u.index === i));
      return sendList(input, inputs, false, (errors) =>
        [
          ...unreadable.map(({ index, message }) => ({ index, message })),
          ...errors.map((e) => ({ index: positions[e.index]!, message: e.message })),
        ].sort((a, b) => a.index - b.index),
      );
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails',
    summary:
      'List emails, newest first, with keyset pagination (limit, after, before); filters: status, recipient (to), search (q), tag, creation time',
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
    handler: async ({ deps, workspace, params }) => ({
      events: await deps.services.emails.events(workspace.id, params.id!),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/emails/:id/share',
    summary:
      'A public, expiring link to the rendered message (`expires_in`: "30m", "24h", "7d"; default 24h, at most 30 days)',
    operation: 'api',
    scope: 'emails:read',
    body: z.object({ expires_in: z.string().max(20).optional() }),
    handler: ({ deps, workspace, params, body }) =>
      deps.services.emails.share(workspace.id, params.id!, body.expires_in),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/emails/:id/cancel',
    summary: 'Cancel a scheduled or queued email (recipients not yet being delivered)',
    operation: 'api',
    scope: 'emails:write',
    handler: ({ deps, workspace, params }) => deps.services.emails.cancel(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/emails/:id',
    summary: 'Reschedule a scheduled email (`scheduled_at`: ISO 8601 or "in 10 minutes"; null sends it now)',
    operation: 'api',
    scope: 'emails:write',
    body: z.object({ scheduled_at: z.string().nullable() }),
    handler: ({ deps, workspace, params, body }) =>
      deps.services.emails.reschedule(workspace.id, params.id!, parseScheduledAt(body.scheduled_at, deps.clock.now())),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/:id/attachments',
    summary: "The email's attachments, each with a download_url that works for an hour",
    operation: 'api',
    scope: 'emails:read',
    handler: async ({ deps, workspace, params }) =>
      cursorList(await deps.services.emails.attachments(workspace.id, params.id!), false),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/emails/:id/attachments/:attachment_id',
    summary: 'One attachment of the email, with its download_url',
    operation: 'api',
    scope: 'emails:read',
    handler: async ({ deps, workspace, params }) => {
      const found = (await deps.services.emails.attachments(workspace.id, params.id!)).find(
        (a) => a.id === params.attachment_id,
      );
      if (!found) throw notFound(`Attachment ${params.attachment_id}`);
      return found;
    },
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
