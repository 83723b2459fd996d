import { validationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Workspace } from '../../store/workspaces.js';
import type { EmailType } from '../../store/emails.js';
import { checkMetadata } from '../../shared/metadata.js';
import libmime from 'libmime';
import type { AddressObject, ParsedMail } from 'mailparser';
import { parseMail } from '../../shared/parse-mail.js';
import { requireAddress, type Address } from '../../messages/addresses.js';
import { editRootHeaders } from '../../messages/raw-message.js';
import { emailRecords, type Prepared } from '../../messages/email-records.js';
import { listUnsubscribeHeaders } from '../../messages/links.js';
import type { RawSendInput, SendInput } from './send-input.js';
import { checkTags, dedupe, poolOf, sendingDomain, type SendServiceDeps } from './send-checks.js';

const MAILSVC_HEADER = /^x-mailsvc-/i;

type MailsvcOptions = ReturnType<typeof mailsvcHeaders>;

/** A whole message as submitted (SMTP), checked and turned into the rows the queue takes; recipients from the envelope. */
export async function prepareRaw(deps: SendServiceDeps, workspace: Workspace, input: RawSendInput): Promise<Prepared> {
  const now = deps.clock.now();
  const parsed = await parseMail(input.raw, {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipImageLinks: true,
    skipTextLinks: true,
  });
  const options = mailsvcHeaders(parsed.headers);
  const from = authorOf(parsed);
  await sendingDomain(
    deps,
    workspace,
    { name: '', address: requireAddress('MAIL FROM', input.envelopeFrom) },
    input.test,
    'MAIL FROM',
    input.senderDomainId,
  );
  const domain = await sendingDomain(deps, workspace, from, input.test, 'From', input.senderDomainId);
  const recipients = dedupe(input.recipients.map((r) => ({ name: '', address: requireAddress('RCPT TO', r) })));
  if (recipients.length === 0) throw validationError('RCPT TO', 'at least one recipient is required');
  const id = newId();
  const messageId = parsed.messageId
    ? parsed.messageId.startsWith('<')
      ? parsed.messageId
      : `<${parsed.messageId}>`
    : `<${id}@${domain.name}>`;
  const raw = await rewriteHeaders(deps, workspace, input.raw, { parsed, options, recipients, id, messageId, now });
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
    ipPoolId: await poolOf(deps, 'X-Mailsvc-Ip-Pool', options.ipPool),
    workspacePoolId: workspace.ip_pool_id,
  });
}

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

function authorOf(parsed: ParsedMail): Address {
  const author = parsed.from?.value[0];
  if (!author?.address) throw validationError('From', 'the message has no From header');
  return { name: (author.name ?? '').replace(/[\r\n]+/g, ' '), address: requireAddress('From', author.address) };
}

const listed = (field: AddressObject | AddressObject[] | undefined): Address[] =>
  (Array.isArray(field) ? field : field ? [field] : [])
    .flatMap((o) => o.value)
    .filter((a) => a.address)
    .map((a) => ({ name: a.name ?? '', address: a.address! }));

/** Drops what the caller may not send (our X-Mailsvc-* options, Bcc, Return-Path) and adds what a message lacks. */
function rewriteHeaders(
  deps: SendServiceDeps,
  workspace: Workspace,
  raw: Buffer,
  m: { parsed: ParsedMail; options: MailsvcOptions; recipients: string[]; id: string; messageId: string; now: number },
): Promise<Buffer> {
  return editRootHeaders(raw, (headers) => {
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
    if (!m.parsed.messageId) headers.add('Message-ID', m.messageId);
    if (!headers.hasHeader('date')) headers.add('Date', new Date(m.now).toUTCString().replace('GMT', '+0000'));
    if (m.options.type === 'marketing' && !headers.hasHeader('list-unsubscribe')) {
      const first = listed(m.parsed.to)[0]?.address ?? m.recipients[0]!;
      for (const [name, value] of Object.entries(
        listUnsubscribeHeaders(deps.links.unsubscribe(workspace.id, first, m.id)),
      ))
        headers.add(name, value);
    }
  });
}
