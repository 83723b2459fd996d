import { AppError, isAppError, validationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Domain } from '../../store/domains.js';
import type { Workspace } from '../../store/workspaces.js';
import { checkMetadata } from '../../shared/metadata.js';
import type { TemplateService } from '../templates.js';
import { hasLineBreak, parseMailbox, parseMailboxes, singleLine, type Address } from '../../messages/addresses.js';
import { resolveAttachments } from '../../messages/attachments.js';
import { emailRecords, type Prepared } from '../../messages/email-records.js';
import { buildMessage } from '../../messages/build-message.js';
import { composeInline } from '../../messages/compose.js';
import type { TrackingFlags } from '../../messages/links.js';
import { renderSubject, renderTemplate, type Variables } from '../../messages/render-template.js';
import type { SendInput } from './send-input.js';
import {
  MAX_RECIPIENTS,
  checkHeaders,
  checkScheduledAt,
  checkTags,
  dedupe,
  defaultSender,
  poolOf,
  sendingDomain,
  type SendServiceDeps,
} from './send-checks.js';

type Template = Awaited<ReturnType<TemplateService['content']>>;

/** An API message, checked and built into the rows the queue takes: a list of steps, each of which may refuse it. */
export async function prepareMessage(deps: SendServiceDeps, workspace: Workspace, input: SendInput): Promise<Prepared> {
  const now = deps.clock.now();
  const template = input.templateId !== undefined ? await findTemplate(deps, workspace, input.templateId) : undefined;
  const { from, replyTo, domain } = await resolveSender(deps, workspace, input, template);
  const { to, cc, bcc, recipients } = checkRecipients(input);
  const id = newId();
  // Marketing mail can always be left with one click (RFC 8058), and templates may link to it.
  const unsubscribeUrl =
    input.type === 'marketing' ? deps.links.unsubscribe(workspace.id, to[0]!.address, id) : undefined;
  const { subject, html, text } = renderContent(input, template, unsubscribeUrl);
  const { tags, scheduledAt, headers } = checkOptions(input, now);
  const ipPoolId = await poolOf(deps, 'ip_pool', input.ipPool);
  const attachments = await resolveAttachments(input.attachments, deps.fetchAttachment);
  const messageId = `<${id}@${domain.name}>`;
  const track = trackingFlags(deps, input, domain, html !== undefined);
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
    { compose: composeInline, links: deps.links },
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

async function findTemplate(deps: SendServiceDeps, workspace: Workspace, id: string): Promise<Template> {
  try {
    return await deps.templates.content(workspace.id, id);
  } catch (err) {
    if (isAppError(err) && err.code === 'not_found')
      throw new AppError('not_found', `templateId: template ${id} not found`, { field: 'templateId' });
    throw err;
  }
}

/** A template's own sender and reply-to apply when the request names none. */
async function resolveSender(
  deps: SendServiceDeps,
  workspace: Workspace,
  input: SendInput,
  template: Template | undefined,
): Promise<{ from: Address; replyTo: Address[]; domain: Domain }> {
  const fromField = input.fromField ?? 'from';
  const from =
    input.from ?? (template?.from ? parseMailbox('from', template.from) : await defaultSender(deps, workspace));
  const replyTo = input.replyTo ?? (template?.reply_to ? parseMailboxes('reply_to', template.reply_to) : []);
  singleLine(fromField, from.name);
  const domain = await sendingDomain(deps, workspace, from, input.test, fromField, input.senderDomainId);
  return { from, replyTo, domain };
}

function checkRecipients(input: SendInput) {
  const to = input.to;
  const cc = input.cc ?? [];
  const bcc = input.bcc ?? [];
  if (to.length === 0) throw validationError('to', 'is required');
  const recipients = dedupe([...to, ...cc, ...bcc]);
  if (recipients.length > MAX_RECIPIENTS)
    throw validationError('to', `at most ${MAX_RECIPIENTS} recipients in to, cc and bcc together`);
  return { to, cc, bcc, recipients };
}

function checkOptions(input: SendInput, now: number) {
  const tags = checkTags(input.tags);
  if (input.metadata !== undefined) checkMetadata('metadata', input.metadata);
  if (input.externalId !== undefined && (input.externalId.length > 255 || hasLineBreak(input.externalId))) {
    throw validationError('external_id', 'must be one line of at most 255 characters');
  }
  return { tags, scheduledAt: checkScheduledAt(input.scheduledAt, now), headers: checkHeaders(input.headers) };
}

/** Subject and bodies from the request or the template, with variables filled in when there are any. */
function renderContent(input: SendInput, template: Template | undefined, unsubscribeUrl: string | undefined) {
  const variables: Variables = {
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
  return { subject, html, text };
}

/** The request's word, else the sending domain's (domains.update), else on for marketing and off for transactional (SPEC, /v1). */
function trackingFlags(deps: SendServiceDeps, input: SendInput, domain: Domain, hasHtml: boolean): TrackingFlags {
  const marketing = input.type === 'marketing';
  return {
    opens: hasHtml && (input.trackOpens ?? domain.open_tracking ?? (marketing && deps.config.tracking.opens)),
    clicks: hasHtml && (input.trackClicks ?? domain.click_tracking ?? (marketing && deps.config.tracking.clicks)),
  };
}
