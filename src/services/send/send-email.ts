import { AppError, isAppError, validationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { listDomains, type Domain } from '../../store/domains.js';
import { findIpPool } from '../../store/ip-pools.js';
import type { Workspace } from '../../store/workspaces.js';
import type { EmailType } from '../../store/emails.js';
import type { ServiceDeps } from '../deps.js';
import { checkMetadata } from '../../shared/metadata.js';
import type { TemplateService } from '../templates.js';
import libmime from 'libmime';
import type { AddressObject } from 'mailparser';
import { parseMail } from '../../shared/parse-mail.js';
import {
  hasLineBreak,
  parseMailbox,
  parseMailboxes,
  requireAddress,
  singleLine,
  type Address,
} from '../../messages/addresses.js';
import { domainOf } from '../../shared/domain-name.js';
import { editRootHeaders } from '../../messages/raw-message.js';
import { resolveAttachments, type AttachmentFetcher } from '../../messages/attachments.js';
import { emailRecords, type Prepared } from '../../messages/email-records.js';
import { buildMessage } from '../../messages/build-message.js';
import { composeInline } from '../../messages/compose.js';
import { listUnsubscribeHeaders, type MessageLinks, type TrackingFlags } from '../../messages/links.js';
import { renderSubject, renderTemplate } from '../../messages/render-template.js';
import type { Enqueue } from './enqueue.js';
import type { RawSendInput, SendInput, SendOptions, SendOutcome } from './send-input.js';

/** Most recipients (to + cc + bcc) of one message, as Resend allows. */
const MAX_RECIPIENTS = 50;
/** Most messages in one batch request. */
export const MAX_BATCH = 100;
const MAX_TAGS = 20;
/** How far ahead a message may be scheduled. */
const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

/** Headers a caller may not set: mailsvc writes them, or they would change who the mail is from or to. */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'sender',
  'reply-to',
  'return-path',
  'received',
  'dkim-signature',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'authentication-results',
]);
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,75}$/;

export interface SendService {
  send(workspace: Workspace, input: SendInput, options?: SendOptions): Promise<SendOutcome>;
  /** All or nothing: every message is validated before any is queued. */
  sendMany(workspace: Workspace, inputs: SendInput[], options?: SendOptions): Promise<SendOutcome>;
  /** Queues a whole message as submitted (SMTP); recipients from the envelope. */
  sendRaw(workspace: Workspace, input: RawSendInput, options?: SendOptions): Promise<SendOutcome>;
  /** The sender used when a request names none (legacy from_email absent). */
  defaultSender(workspace: Workspace): Promise<Address>;
  /** Throws 403 unless `address` may send for the workspace (verified domain; added, for test keys). */
  checkSender(workspace: Workspace, address: string, test: boolean, senderDomainId?: string | null): Promise<void>;
}

interface SendServiceDeps extends ServiceDeps {
  templates: TemplateService;
  /** The one door into the queue. */
  enqueue: Enqueue;
  fetchAttachment: AttachmentFetcher | null;
  links: MessageLinks;
}

/** One queue item per recipient: the same address in to and bcc is sent once (local parts keep their case). */
const dedupe = (list: Address[]): string[] => {
  const seen = new Map<string, string>();
  for (const a of list) if (!seen.has(a.address.toLowerCase())) seen.set(a.address.toLowerCase(), a.address);
  return [...seen.values()];
};

function checkHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name)) throw validationError(`headers.${name}`, 'is not a valid header name');
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      throw validationError(`headers.${name}`, 'is set by mailsvc and cannot be overridden');
    if (typeof value !== 'string' || hasLineBreak(value) || value.length > 998)
      throw validationError(`headers.${name}`, 'must be one line of at most 998 characters');
    out[name] = value;
  }
  return out;
}

function checkTags(tags: string[] | undefined): string[] {
  if (!tags) return [];
  if (tags.length > MAX_TAGS) throw validationError('tags', `at most ${MAX_TAGS} tags`);
  tags.forEach((t, i) => {
    if (t.length === 0 || t.length > 256 || /[\u0000-\u001f]/.test(t))
      throw validationError(`tags[${i}]`, 'must be 1 to 256 printable characters');
  });
  return tags;
}

export function createSendService(deps: SendServiceDeps): SendService {
  const { db, clock, templates, links } = deps;

  /** The workspace domain a From address may use: verified, or merely added for test keys. */
  async function sendingDomain(
    workspace: Workspace,
    from: Address,
    test: boolean,
    field: string,
    only?: string | null,
  ): Promise<Domain> {
    const domain = domainOf(from.address);
    const match = (await deps.rows.read('domains', workspace.id, () => listDomains(db, workspace.id))).find(
      (d) => d.name === domain,
    );
    if (match && only && match.id !== only)
      throw new AppError('forbidden', `${field}: this API key may send only from one domain, not ${domain}`, { field });
    if (match && (match.status === 'verified' || test)) return match;
    throw new AppError('forbidden', `${field}: ${domain} is not a verified domain of this workspace`, { field });
  }

  /** The pool a request names, by name or id: a 400 on the field when there is none. */
  async function poolOf(field: string, name: string | undefined): Promise<string | null> {
    if (name === undefined) return null;
    const pool = await findIpPool(db, name);
    if (!pool) throw validationError(field, `no IP pool named ${JSON.stringify(name)} (GET /v1/ip-pools)`);
    return pool.id;
  }

  async function defaultSender(workspace: Workspace): Promise<Address> {
    if (workspace.default_from_email) return { name: '', address: workspace.default_from_email };
    const verified = (await listDomains(db, workspace.id)).find((d) => d.status === 'verified');
    if (!verified)
      throw new AppError('forbidden', 'from_email: is required: this workspace has no verified domain to send from', {
        field: 'from_email',
      });
    return { name: '', address: `noreply@${verified.name}` };
  }

  async function prepare(workspace: Workspace, input: SendInput): Promise<Prepared> {
    const now = clock.now();
    const fromField = input.fromField ?? 'from';
    const template = input.templateId !== undefined ? await findTemplate(workspace, input.templateId) : undefined;
    // A template's own sender and reply-to apply when the request names none.
    const from = input.from ?? (template?.from ? parseMailbox('from', template.from) : await defaultSender(workspace));
    const replyTo = input.replyTo ?? (template?.reply_to ? parseMailboxes('reply_to', template.reply_to) : []);
    singleLine(fromField, from.name);
    const domain = await sendingDomain(workspace, from, input.test, fromField, input.senderDomainId);

    const to = input.to;
    const cc = input.cc ?? [];
    const bcc = input.bcc ?? [];
    if (to.length === 0) throw validationError('to', 'is required');
    const recipients = dedupe([...to, ...cc, ...bcc]);
    if (recipients.length > MAX_RECIPIENTS)
      throw validationError('to', `at most ${MAX_RECIPIENTS} recipients in to, cc and bcc together`);

    const id = newId();
    // Marketing mail can always be left with one click (RFC 8058), and templates may link to it.
    const unsubscribeUrl = input.type === 'marketing' ? links.unsubscribe(workspace.id, to[0]!.address, id) : undefined;
    const variables = {
      ...template?.defaults,
      ...(unsubscribeUrl ? { unsubscribe_url: unsubscribeUrl } : {}),
      ...input.variables,
    };
    const interpolate = template !== undefined || input.variables !== undefined || unsubscribeUrl !== undefined;
    const subjectSource = input.subject ?? template?.subject ?? undefined;
    if (subjectSource === undefined || subjectSource.trim() === '') throw validationError('subject', 'is required');
    singleLine('subject', subjectSource);
    const subject = interpolate ? renderSubject(subjectSource, variables) : subjectSource;
    if (subject.length > 998) throw validationError('subject', 'must be at most 998 characters');
    const htmlSource = input.html ?? template?.html;
    const textSource = input.text ?? template?.text ?? undefined;
    if (htmlSource === undefined && textSource === undefined)
      throw validationError('html', 'is required (or text, or a template)');
    const html = htmlSource !== undefined && interpolate ? renderTemplate(htmlSource, variables, 'html') : htmlSource;
    const text = textSource !== undefined && interpolate ? renderTemplate(textSource, variables, 'text') : textSource;

    const tags = checkTags(input.tags);
    if (input.metadata !== undefined) checkMetadata('metadata', input.metadata);
    if (input.externalId !== undefined && (input.externalId.length > 255 || hasLineBreak(input.externalId))) {
      throw validationError('external_id', 'must be one line of at most 255 characters');
    }
    let scheduledAt = input.scheduledAt ?? null;
    if (scheduledAt !== null && scheduledAt <= now) scheduledAt = null;
    if (scheduledAt !== null && scheduledAt > now + MAX_SCHEDULE_MS)
      throw validationError('scheduled_at', 'must be within 30 days');

    const headers = checkHeaders(input.headers);
    const ipPoolId = await poolOf('ip_pool', input.ipPool);
    const attachments = await resolveAttachments(input.attachments, deps.fetchAttachment);
    const messageId = `<${id}@${domain.name}>`;
    // Tracking: the request's word, else the sending domain's (domains.update), else on for
    // marketing and off for transactional (SPEC, /v1).
    const track: TrackingFlags = {
      opens:
        html !== undefined &&
        (input.trackOpens ?? domain.open_tracking ?? (input.type === 'marketing' && deps.config.tracking.opens)),
      clicks:
        html !== undefined &&
        (input.trackClicks ?? domain.click_tracking ?? (input.type === 'marketing' && deps.config.tracking.clicks)),
    };
    const raw = await buildMessage(
      {
        emailId: id,
        from,
        to,
        cc,
        replyTo,
        subject,
        html,
        text,
        headers,
        attachments,
        messageId,
        date: new Date(now),
        track,
        unsubscribeUrl: unsubscribeUrl ?? null,
      },
      { compose: composeInline, links },
    );
    return emailRecords(workspace.id, {
      id,
      now,
      input,
      domain,
      from,
      to,
      cc,
      bcc,
      replyTo,
      recipients,
      subject,
      messageId,
      templateId: template?.id ?? null,
      tags,
      scheduledAt,
      raw,
      track,
      ipPoolId,
      workspacePoolId: workspace.ip_pool_id,
    });
  }

  async function findTemplate(workspace: Workspace, id: string) {
    try {
      return await templates.content(workspace.id, id);
    } catch (err) {
      if (isAppError(err) && err.code === 'not_found')
        throw new AppError('not_found', `templateId: template ${id} not found`, { field: 'templateId' });
      throw err;
    }
  }

  async function sendMany(
    workspace: Workspace,
    inputs: SendInput[],
    options: SendOptions = {},
    indexed = true,
  ): Promise<SendOutcome> {
    if (inputs.length === 0) throw validationError('body', 'at least one message is required');
    const prepared: Prepared[] = [];
    const errors: Array<{ index: number; message: string; error: AppError }> = [];
    for (const [i, input] of inputs.entries()) {
      try {
        prepared.push(await prepare(workspace, input));
      } catch (err) {
        const indexedError =
          indexed && isAppError(err) && err.field !== undefined
            ? new AppError(err.code, `[${i}].${err.message}`, { field: `[${i}].${err.field}` })
            : err;
        if (!options.permissive || !isAppError(err) || err.code === 'internal_error') throw indexedError;
        errors.push({ index: i, message: err.message, error: indexedError as AppError });
      }
    }
    // Nothing valid to queue: the answer is the first message's error, as without permissive.
    if (prepared.length === 0) throw errors[0]!.error;
    const refused = options.permissive ? errors.map(({ index, message }) => ({ index, message })) : undefined;
    const outcome = await commit(workspace, prepared, options, refused);
    return refused ? { ...outcome, errors: refused } : outcome;
  }

  /** Through the one door: the workspace's limits, then the queue. */
  async function commit(
    workspace: Workspace,
    prepared: Prepared[],
    options: SendOptions,
    refused?: SendOutcome['errors'],
  ): Promise<SendOutcome> {
    return deps.enqueue(workspace, prepared, {
      inTransaction: options.inTransaction && ((trx, results) => options.inTransaction!(trx, results, refused)),
    });
  }

  const MAILSVC_HEADER = /^x-mailsvc-/i;

  /** The message's X-Mailsvc-* headers, as the JSON fields API callers would send. */
  function mailsvcHeaders(headers: Map<string, unknown>) {
    const get = (name: string): string | undefined => {
      const value = headers.get(name);
      // Clients encode header values that look structured (nodemailer does for JSON).
      return typeof value === 'string' ? libmime.decodeWords(value).trim() : undefined;
    };
    const type = get('x-mailsvc-type') ?? 'transactional';
    if (type !== 'transactional' && type !== 'marketing')
      throw validationError('X-Mailsvc-Type', 'must be transactional or marketing');
    let metadata: Record<string, unknown> | undefined;
    const metadataText = get('x-mailsvc-metadata');
    if (metadataText !== undefined) {
      try {
        metadata = JSON.parse(metadataText) as Record<string, unknown>;
      } catch {
        throw validationError('X-Mailsvc-Metadata', 'must be a JSON object');
      }
      if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
        throw validationError('X-Mailsvc-Metadata', 'must be a JSON object');
    }
    const tags = get('x-mailsvc-tags')
      ?.split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    return {
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- the narrowed literal widens to string in a returned object
      type: type as EmailType,
      metadata,
      tags,
      externalId: get('x-mailsvc-external-id'),
      ipPool: get('x-mailsvc-ip-pool'),
    };
  }

  async function prepareRaw(workspace: Workspace, input: RawSendInput): Promise<Prepared> {
    const now = clock.now();
    const parsed = await parseMail(input.raw, {
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipImageLinks: true,
      skipTextLinks: true,
    });
    const options = mailsvcHeaders(parsed.headers);
    const author = parsed.from?.value[0];
    if (!author?.address) throw validationError('From', 'the message has no From header');
    const from: Address = {
      name: (author.name ?? '').replace(/[\r\n]+/g, ' '),
      address: requireAddress('From', author.address),
    };
    await sendingDomain(
      workspace,
      { name: '', address: requireAddress('MAIL FROM', input.envelopeFrom) },
      input.test,
      'MAIL FROM',
      input.senderDomainId,
    );
    const domain = await sendingDomain(workspace, from, input.test, 'From', input.senderDomainId);
    const listed = (field: AddressObject | AddressObject[] | undefined): Address[] =>
      (Array.isArray(field) ? field : field ? [field] : [])
        .flatMap((o) => o.value)
        .filter((a) => a.address)
        .map((a) => ({ name: a.name ?? '', address: a.address! }));
    const recipients = dedupe(input.recipients.map((r) => ({ name: '', address: requireAddress('RCPT TO', r) })));
    if (recipients.length === 0) throw validationError('RCPT TO', 'at least one recipient is required');
    const id = newId();
    const messageId = parsed.messageId
      ? parsed.messageId.startsWith('<')
        ? parsed.messageId
        : `<${parsed.messageId}>`
      : `<${id}@${domain.name}>`;
    const raw = await editRootHeaders(input.raw, (headers) => {
      const ours = new Set(
        headers
          .getList()
          .map((line) => line.key)
          .filter((key) => MAILSVC_HEADER.test(key)),
      );
      for (const key of ours) headers.remove(key);
      // Blind copies come from the envelope; Return-Path is the delivery engine's to write.
      headers.remove('bcc');
      headers.remove('return-path');
      if (!parsed.messageId) headers.add('Message-ID', messageId);
      if (!headers.hasHeader('date')) headers.add('Date', new Date(now).toUTCString().replace('GMT', '+0000'));
      if (options.type === 'marketing' && !headers.hasHeader('list-unsubscribe')) {
        const first = listed(parsed.to)[0]?.address ?? recipients[0]!;
        for (const [name, value] of Object.entries(listUnsubscribeHeaders(links.unsubscribe(workspace.id, first, id))))
          headers.add(name, value);
      }
    });
    const sendInput: SendInput = {
      intake: input.intake,
      test: input.test,
      from,
      to: [],
      type: options.type,
      tags: options.tags,
      metadata: options.metadata,
      externalId: options.externalId,
    };
    const tags = checkTags(options.tags);
    if (options.metadata !== undefined) checkMetadata('X-Mailsvc-Metadata', options.metadata);
    return emailRecords(workspace.id, {
      id,
      now,
      input: sendInput,
      domain,
      from,
      to: listed(parsed.to),
      cc: listed(parsed.cc),
      bcc: [],
      replyTo: listed(parsed.replyTo),
      recipients,
      subject: (parsed.subject ?? '').replace(/[\r\n]+/g, ' '),
      messageId,
      templateId: null,
      tags,
      scheduledAt: null,
      raw,
      // A submitted message is sent as it is: its HTML is not rewritten for tracking.
      track: { opens: false, clicks: false },
      ipPoolId: await poolOf('X-Mailsvc-Ip-Pool', options.ipPool),
      workspacePoolId: workspace.ip_pool_id,
    });
  }

  return {
    sendRaw: async (workspace, input, options = {}) => commit(workspace, [await prepareRaw(workspace, input)], options),
    send: (workspace, input, options) => sendMany(workspace, [input], options, false),
    sendMany: (workspace, inputs, options) => {
      if (inputs.length > MAX_BATCH) throw validationError('body', `at most ${MAX_BATCH} messages per batch`);
      return sendMany(workspace, inputs, options);
    },
    defaultSender,
    checkSender: async (workspace, address, test, senderDomainId) => {
      await sendingDomain(workspace, { name: '', address }, test, 'from', senderDomainId);
    },
  };
}
