import { findIpPool } from '../../store/ip-pools.js';
import { toIso } from '../../shared/clock.js';
import { AppError, validationError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { checkMetadata } from '../../shared/metadata.js';
import { findAudience } from '../../store/audiences.js';
import type { Campaign } from '../../store/campaigns.js';
import { listKnownTags } from '../../store/subscribers.js';
import type { Workspace } from '../../store/workspaces.js';
import { hasLineBreak, parseMailboxes, requireAddress, singleLine } from '../../messages/addresses.js';
import { abSettingsOf, checkAbTest, type AbTestInput, type VariantRow } from './ab-test.js';
import type { Variables } from '../../messages/render-template.js';
import type { ServiceDeps } from '../deps.js';
import type { TopicService } from './topics.js';
import type { SendService } from '../send/send-email.js';
import type { TemplateService } from '../templates.js';

/** A campaign's input checked into the fields of its row, and back. */

type CampaignFieldDeps = Pick<ServiceDeps, 'db' | 'clock'> & {
  send: SendService;
  templates: TemplateService;
  topics: TopicService;
};

export interface CampaignInput extends AbTestInput {
  name?: string | undefined;
  /** The IP pool its messages leave through (a pool's name or id); else their domain's, their workspace's. */
  ipPool?: string | undefined;
  subject: string;
  fromName: string;
  fromEmail: string;
  html?: string | undefined;
  text?: string | undefined;
  templateId?: string | undefined;
  tags?: string[] | undefined;
  audienceId?: string | undefined;
  /** Only subscribers in on this topic. */
  topicId?: string | undefined;
  replyTo?: string[] | undefined;
  /** The preheader shown beside the subject in inboxes. */
  previewText?: string | undefined;
  variables?: Variables | undefined;
  externalId?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** Most characters of a preheader. */
const MAX_PREVIEW_TEXT = 500;
/** How far ahead a campaign may be scheduled (as emails). */
const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

/** When a campaign sent now or at `scheduledAt` starts queuing: null now, else the time (within 30 days). */
export function checkSchedule(now: number, scheduledAt: number | null | undefined): number | null {
  if (scheduledAt == null || scheduledAt <= now) return null;
  if (scheduledAt > now + MAX_SCHEDULE_MS) throw validationError('scheduled_at', 'must be within 30 days');
  return scheduledAt;
}

/** The send service's check of the sender, its errors named for the campaign's field. */
export const checkedSender = (send: SendService, workspace: Workspace, fromEmail: string, test: boolean) =>
  send.checkSender(workspace, fromEmail, test).catch((err: unknown) => {
    throw err instanceof AppError
      ? new AppError(err.code, err.message.replace(/^from:/, 'from_email:'), { field: 'from_email' })
      : err;
  });

const templateContent = (templates: TemplateService, workspaceId: string) => (field: string, id: string) =>
  templates.content(workspaceId, id).catch(() => {
    throw validationError(field, `template ${id} not found`);
  });

/** Checks a whole campaign's content, recipients and test; returns its row fields and variants (`kept`: a draft's, unless new ones are given). */
export async function campaignFields(
  deps: CampaignFieldDeps,
  workspace: Workspace,
  input: CampaignInput,
  test: boolean,
  kept: readonly VariantRow[] = [],
) {
  const { db, clock, topics } = deps;
  const fromEmail = requireAddress('from_email', input.fromEmail);
  singleLine('from_name', input.fromName);
  if (input.fromName.length > 200) throw validationError('from_name', 'must be at most 200 characters');
  singleLine('subject', input.subject);
  if (input.subject.trim() === '' || input.subject.length > 998)
    throw validationError('subject', 'must be 1 to 998 characters');
  if (input.html === undefined && input.text === undefined && input.templateId === undefined)
    throw validationError('html', 'is required if templateId is absent (or text)');
  if (input.html !== undefined && input.templateId !== undefined)
    throw validationError('templateId', 'cannot be combined with html: give exactly one');
  if (input.html !== undefined && input.html.trim() === '') throw validationError('html', 'must not be empty');
  if (input.text !== undefined && input.text.trim() === '') throw validationError('text', 'must not be empty');
  if (
    input.previewText !== undefined &&
    (input.previewText.length > MAX_PREVIEW_TEXT || hasLineBreak(input.previewText))
  )
    throw validationError('preview_text', `must be one line of at most ${MAX_PREVIEW_TEXT} characters`);
  const replyTo = parseMailboxes('reply_to', input.replyTo);
  if (input.metadata !== undefined) checkMetadata('metadata', input.metadata);
  if (input.externalId !== undefined && (input.externalId.length > 255 || hasLineBreak(input.externalId)))
    throw validationError('external_id', 'must be one line of at most 255 characters');
  const name =
    input.name?.trim() || `${input.subject.slice(0, 60)} (${toIso(clock.now()).slice(0, 16).replace('T', ' ')})`;
  if (name.length > 200) throw validationError('name', 'must be at most 200 characters');
  await checkedSender(deps.send, workspace, fromEmail, test);
  let html = input.html ?? null;
  let text = input.text ?? null;
  if (input.templateId !== undefined) {
    // The template is copied: editing it later does not change a campaign being sent.
    const template = await templateContent(deps.templates, workspace.id)('templateId', input.templateId);
    html = template.html;
    text ??= template.text;
  }
  const tags = input.tags === undefined ? [] : [...new Set(input.tags.map((t) => t.trim()))];
  if (tags.length > 0) {
    const known = new Set(await listKnownTags(db, workspace.id, tags));
    const unknown = tags.filter((t) => !known.has(t));
    if (unknown.length > 0)
      throw validationError(
        'tags',
        `no subscriber has the tag${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => `"${t}"`).join(', ')}`,
      );
  }
  if (
    input.audienceId !== undefined &&
    !(isUuid(input.audienceId) && (await findAudience(db, workspace.id, input.audienceId)))
  ) {
    throw validationError('audience_id', `audience ${input.audienceId} not found`);
  }
  if (input.topicId !== undefined) await topics.check(workspace.id, input.topicId, 'topic_id');
  const pool = input.ipPool === undefined ? undefined : await findIpPool(db, input.ipPool);
  if (input.ipPool !== undefined && !pool)
    throw validationError('ip_pool', `no IP pool named ${JSON.stringify(input.ipPool)} (GET /v1/ip-pools)`);
  const ab = await checkAbTest(
    input,
    { subject: input.subject, fromName: input.fromName, previewText: input.previewText ?? null, html, text },
    templateContent(deps.templates, workspace.id),
    kept,
  );
  const fields = {
    name,
    subject: input.subject,
    from_name: input.fromName,
    from_email: fromEmail,
    html,
    text,
    reply_to:
      replyTo.length > 0 ? replyTo.map((a) => (a.name ? `${JSON.stringify(a.name)} <${a.address}>` : a.address)) : null,
    preview_text: input.previewText ?? null,
    template_id: input.templateId ?? null,
    tags: tags.length > 0 ? tags : null,
    audience_id: input.audienceId ?? null,
    topic_id: input.topicId ?? null,
    variables: input.variables ?? null,
    external_id: input.externalId ?? null,
    metadata: input.metadata ?? null,
    ip_pool_id: pool?.id ?? null,
    ...ab.fields,
  };
  return { fields, variants: ab.variants };
}

/** A campaign's content as the input that would make it (to change a draft, or copy it). */
export const inputOf = (c: Campaign): CampaignInput => ({
  name: c.name,
  subject: c.subject,
  fromName: c.from_name,
  fromEmail: c.from_email,
  // A template was copied into html when the campaign was made.
  html: c.html ?? undefined,
  text: c.text ?? undefined,
  tags: c.tags ?? undefined,
  audienceId: c.audience_id ?? undefined,
  topicId: c.topic_id ?? undefined,
  replyTo: c.reply_to ?? undefined,
  previewText: c.preview_text ?? undefined,
  variables: c.variables ?? undefined,
  externalId: c.external_id ?? undefined,
  metadata: c.metadata ?? undefined,
  ipPool: c.ip_pool_id ?? undefined,
  ...abSettingsOf(c),
});
