import { findIpPool } from '../../store/ip-pools.js';
import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { findAudience } from '../../store/audiences.js';
import { cancelCampaignMessages, countCampaigns, findCampaign, listCampaigns, markCampaignCancelled, removeUnstartedCampaign, saveCampaign, startDraftCampaign, unscheduleCampaign, updateDraftCampaign, type Campaign, type WinnerChoice, type WinnerMetric } from '../../store/campaigns.js';
import { countSelection, listKnownTags, type AudienceSelection } from '../../store/subscribers.js';
import type { Workspace } from '../../store/workspaces.js';
import { listCampaignVariants, saveCampaignVariants, saveWinner, type CampaignVariant } from '../../store/ab-tests.js';
import { abSettingsOf, checkAbTest, type AbTestInput, type VariantRow } from './ab-test.js';
import { contentOf } from '../../messages/campaign-content.js';
import { campaignReport, type GroupStats } from './campaign-report.js';
import type { ServiceDeps } from '../deps.js';
import { checkMetadata } from '../../shared/metadata.js';
import { hasLineBreak, parseMailboxes, requireAddress, singleLine } from '../../messages/addresses.js';
import { renderSubject, renderTemplate, type Variables } from '../../messages/render-template.js';
import { subscriberVariables } from '../../messages/campaign-message.js';
import { plainTextOf } from '../../messages/plain-text.js';
import type { TopicService } from './topics.js';
import type { ListPage, Listed } from '../../store/list-page.js';
import type { SendService } from '../send/send-email.js';
import type { TemplateService } from '../templates.js';

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

export interface CreateOptions {
  /** false: a draft, sent later by `send` (default true: queue now). */
  send?: boolean | undefined;
  /** Queue at this time rather than now (epoch ms). */
  scheduledAt?: number | null | undefined;
}

export interface CampaignView {
  id: string;
  object: 'campaign';
  name: string;
  status: Campaign['status'];
  subject: string;
  from: string;
  reply_to: string[] | null;
  preview_text: string | null;
  html: string | null;
  text: string | null;
  tags: string[] | null;
  audience_id: string | null;
  topic_id: string | null;
  template_id: string | null;
  external_id: string | null;
  metadata: Record<string, unknown> | null;
  /** The IP pool its messages leave through; null: their domain's or workspace's. */
  ip_pool_id: string | null;
  test: boolean;
  recipients: number;
  created_at: string;
  updated_at: string;
  /** When queuing starts (a scheduled campaign); null: as soon as it is sent. */
  scheduled_at: string | null;
  queued_at: string | null;
  sent_at: string | null;
  cancelled_at: string | null;
  /** Percent of the recipients held out: sent nothing, to measure the campaign's lift. */
  holdout_percentage: number;
  /** An A/B test: the percent of the recipients the variants go to; null: none. */
  test_percentage: number | null;
  winner_metric: WinnerMetric | null;
  /** How long the test runs before the winner is chosen, e.g. "4 hours". */
  test_duration: string | null;
  /** When the winner is chosen by the metric (once the variants are queued). */
  winner_due_at: string | null;
  winner: WinnerView | null;
  counts?: Record<string, number>;
  /** The variants with what their messages in the test met with (a single campaign). */
  variants?: VariantView[];
}

export interface VariantView {
  id: string;
  name: string | null;
  subject: string;
  preview_text: string | null;
  from_name: string;
  html: string | null;
  text: string | null;
  template_id: string | null;
  stats: GroupStats;
}

export interface WinnerView {
  variant: string;
  chosen_by: WinnerChoice;
  chosen_at: string;
  /** The winner's messages to the rest of the recipients (a single campaign). */
  stats?: GroupStats;
}

export interface CampaignService {
  /**
   * Validates and records a campaign; its recipients are queued in the background, now or at
   * `scheduledAt`, or once it is sent when created as a draft (`send: false`).
   */
  create(workspace: Workspace, input: CampaignInput, test: boolean, options?: CreateOptions): Promise<CampaignView>;
  list(workspaceId: string, page: ListPage): Promise<Listed<CampaignView>>;
  get(workspaceId: string, id: string): Promise<CampaignView>;
  /** Changes a draft. */
  update(workspace: Workspace, id: string, changes: Partial<CampaignInput>, test: boolean): Promise<CampaignView>;
  /** Sends a draft: queued now, or from `scheduledAt`. */
  send(workspace: Workspace, id: string, scheduledAt: number | null, test: boolean): Promise<CampaignView>;
  /**
   * A scheduled campaign that has not started goes back to draft; one being queued or sent is
   * cancelled: nothing more is queued, and its messages not yet handed to delivery are cancelled.
   */
  cancel(workspaceId: string, id: string): Promise<CampaignView>;
  /** Deletes a draft (or a scheduled campaign that has not started). */
  remove(workspaceId: string, id: string): Promise<CampaignView>;
  /** A new draft with the same content and recipients. */
  duplicate(workspace: Workspace, id: string): Promise<CampaignView>;
  /** Ends an A/B test waiting for its winner with the variant chosen by hand: it goes to the rest now. */
  chooseWinner(workspaceId: string, id: string, variant: string): Promise<CampaignView>;
  /** How many recipients sending it now would reach: subscribed members of its segment (and topic), suppressed ones not counted. */
  reach(workspaceId: string, id: string): Promise<number>;
  /** Its subject, HTML and text as one recipient would get them (a sample contact, its variables filled). */
  preview(workspaceId: string, id: string, contact?: PreviewContact): Promise<CampaignPreview>;
}

export interface PreviewContact {
  email?: string | undefined;
  first_name?: string | undefined;
  last_name?: string | undefined;
  properties?: Record<string, unknown> | undefined;
}

export interface CampaignPreview {
  object: 'broadcast_preview';
  id: string;
  subject: string;
  preview_text: string | null;
  html: string | null;
  text: string | null;
}

export interface CampaignServiceDeps extends ServiceDeps {
  send: SendService;
  templates: TemplateService;
  topics: TopicService;
}

/** Most characters of a preheader. */
const MAX_PREVIEW_TEXT = 500;
/** How far ahead a campaign may be scheduled (as emails). */
const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

/** The subscribers a campaign goes to. */
export const selectionOf = (c: Campaign): AudienceSelection => ({ workspaceId: c.workspace_id, tags: c.tags ?? [], audienceId: c.audience_id, topicId: c.topic_id });

export function createCampaignService(deps: CampaignServiceDeps): CampaignService {
  const { db, clock, logger, send, templates, topics } = deps;

  const view = (c: Campaign): CampaignView => ({
    id: c.id,
    object: 'campaign',
    name: c.name,
    status: c.status,
    subject: c.subject,
    from: c.from_name ? `${JSON.stringify(c.from_name)} <${c.from_email}>` : c.from_email,
    reply_to: c.reply_to,
    preview_text: c.preview_text,
    html: c.html,
    text: c.text,
    tags: c.tags,
    audience_id: c.audience_id,
    topic_id: c.topic_id,
    template_id: c.template_id,
    external_id: c.external_id,
    metadata: c.metadata,
    ip_pool_id: c.ip_pool_id,
    test: c.test,
    recipients: c.recipients,
    created_at: toIso(c.created_at),
    updated_at: toIso(c.updated_at ?? c.created_at),
    scheduled_at: toIsoOrNull(c.scheduled_at),
    queued_at: toIsoOrNull(c.queued_at),
    sent_at: toIsoOrNull(c.sent_at),
    cancelled_at: toIsoOrNull(c.cancelled_at),
    holdout_percentage: c.holdout_percentage,
    test_percentage: c.test_percentage,
    winner_metric: c.winner_metric,
    test_duration: c.test_duration_ms === null ? null : formatDuration(c.test_duration_ms),
    winner_due_at: toIsoOrNull(c.winner_due_at),
    winner: c.winner_variant ? { variant: c.winner_variant, chosen_by: c.winner_chosen_by!, chosen_at: toIso(c.winner_chosen_at!) } : null,
  });

  /** A campaign with its counts, and an A/B test's variants with what each met with. */
  const detailed = async (c: Campaign): Promise<CampaignView> => {
    const [report, variants] = await Promise.all([campaignReport(db, deps.dialect, c), listCampaignVariants(db, c.id)]);
    const base = view(c);
    const none: GroupStats = { sent: 0, delivered: 0, opened: 0, clicked: 0, human_opened: 0, human_clicked: 0, human_open_rate: 0, human_click_rate: 0 };
    return {
      ...base,
      counts: report.counts,
      ...(variants.length > 0 ? { variants: variants.map((v) => variantView(c, v, report.test.get(v.variant) ?? none)) } : {}),
      winner: base.winner ? { ...base.winner, stats: report.winner ?? none } : null,
    };
  };

  const find = async (workspaceId: string, id: string): Promise<Campaign> => {
    const found = isUuid(id) ? await findCampaign(db, workspaceId, id) : undefined;
    if (!found) throw notFound(`Campaign ${id}`);
    return found;
  };

  const checkSchedule = (scheduledAt: number | null | undefined): number | null => {
    const now = clock.now();
    if (scheduledAt == null || scheduledAt <= now) return null;
    if (scheduledAt > now + MAX_SCHEDULE_MS) throw validationError('scheduled_at', 'must be within 30 days');
    return scheduledAt;
  };

  const checkedSender = (workspace: Workspace, fromEmail: string, test: boolean) =>
    send.checkSender(workspace, fromEmail, test).catch((err: unknown) => {
      throw err instanceof AppError ? new AppError(err.code, err.message.replace(/^from:/, 'from_email:'), { field: 'from_email' }) : err;
    });

  const templateContent = (workspaceId: string) => (field: string, id: string) =>
    templates.content(workspaceId, id).catch(() => {
      throw validationError(field, `template ${id} not found`);
    });

  /** Checks a whole campaign's content, recipients and test; returns its row fields and variants (`kept`: a draft's, unless new ones are given). */
  async function fieldsOf(workspace: Workspace, input: CampaignInput, test: boolean, kept: readonly VariantRow[] = []) {
    const fromEmail = requireAddress('from_email', input.fromEmail);
    singleLine('from_name', input.fromName);
    if (input.fromName.length > 200) throw validationError('from_name', 'must be at most 200 characters');
    singleLine('subject', input.subject);
    if (input.subject.trim() === '' || input.subject.length > 998) throw validationError('subject', 'must be 1 to 998 characters');
    if (input.html === undefined && input.text === undefined && input.templateId === undefined) throw validationError('html', 'is required if templateId is absent (or text)');
    if (input.html !== undefined && input.templateId !== undefined) throw validationError('templateId', 'cannot be combined with html: give exactly one');
    if (input.html !== undefined && input.html.trim() === '') throw validationError('html', 'must not be empty');
    if (input.text !== undefined && input.text.trim() === '') throw validationError('text', 'must not be empty');
    if (input.previewText !== undefined && (input.previewText.length > MAX_PREVIEW_TEXT || hasLineBreak(input.previewText))) throw validationError('preview_text', `must be one line of at most ${MAX_PREVIEW_TEXT} characters`);
    const replyTo = parseMailboxes('reply_to', input.replyTo);
    if (input.metadata !== undefined) checkMetadata('metadata', input.metadata);
    if (input.externalId !== undefined && (input.externalId.length > 255 || hasLineBreak(input.externalId))) throw validationError('external_id', 'must be one line of at most 255 characters');
    const name = input.name?.trim() || `${input.subject.slice(0, 60)} (${toIso(clock.now()).slice(0, 16).replace('T', ' ')})`;
    if (name.length > 200) throw validationError('name', 'must be at most 200 characters');
    await checkedSender(workspace, fromEmail, test);
    let html = input.html ?? null;
    let text = input.text ?? null;
    if (input.templateId !== undefined) {
      // The template is copied: editing it later does not change a campaign being sent.
      const template = await templateContent(workspace.id)('templateId', input.templateId);
      html = template.html;
      text ??= template.text;
    }
    const tags = input.tags === undefined ? [] : [...new Set(input.tags.map((t) => t.trim()))];
    if (tags.length > 0) {
      const known = new Set(await listKnownTags(db, workspace.id, tags));
      const unknown = tags.filter((t) => !known.has(t));
      if (unknown.length > 0) throw validationError('tags', `no subscriber has the tag${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => `"${t}"`).join(', ')}`);
    }
    if (input.audienceId !== undefined && !(isUuid(input.audienceId) && (await findAudience(db, workspace.id, input.audienceId)))) {
      throw validationError('audience_id', `audience ${input.audienceId} not found`);
    }
    if (input.topicId !== undefined) await topics.check(workspace.id, input.topicId, 'topic_id');
    const pool = input.ipPool === undefined ? undefined : await findIpPool(db, input.ipPool);
    if (input.ipPool !== undefined && !pool) throw validationError('ip_pool', `no IP pool named ${JSON.stringify(input.ipPool)} (GET /v1/ip-pools)`);
    const ab = await checkAbTest(input, { subject: input.subject, fromName: input.fromName, previewText: input.previewText ?? null, html, text }, templateContent(workspace.id), kept);
    const fields = {
      name,
      subject: input.subject,
      from_name: input.fromName,
      from_email: fromEmail,
      html,
      text,
      reply_to: replyTo.length > 0 ? replyTo.map((a) => (a.name ? `${JSON.stringify(a.name)} <${a.address}>` : a.address)) : null,
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
  const inputOf = (c: Campaign): CampaignInput => ({
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

  /** Writes a new campaign and its variants together. */
  const saveWithVariants = (row: Campaign, variants: readonly VariantRow[]) =>
    db.transaction().execute(async (trx) => {
      await saveCampaign(trx, row);
      await saveCampaignVariants(trx, row.id, variants);
    });

  const requireDraft = (c: Campaign, doing: string): void => {
    if (c.status !== 'draft') throw new AppError('invalid_state', `Campaign ${c.id} is ${c.status}: only a draft can be ${doing}`);
  };

  /** Whether a campaign is waiting for its time and nothing of it was queued yet. */
  const notStarted = (c: Campaign): boolean => c.status === 'queuing' && c.cursor === null && c.lease_owner === null && c.scheduled_at !== null && c.scheduled_at > clock.now();

  return {
    async create(workspace, input, test, options = {}) {
      const { fields, variants } = await fieldsOf(workspace, input, test);
      const sendNow = options.send ?? true;
      if (!sendNow && options.scheduledAt != null) throw validationError('scheduled_at', 'applies only to a campaign that is sent (send: true)');
      const now = clock.now();
      const row: Campaign = {
        id: newId(),
        workspace_id: workspace.id,
        status: sendNow ? 'queuing' : 'draft',
        ...fields,
        scheduled_at: sendNow ? checkSchedule(options.scheduledAt) : null,
        test,
        recipients: 0,
        queued: 0,
        cursor: null,
        lease_owner: null,
        lease_until: null,
        created_at: now,
        updated_at: now,
        queued_at: null,
        sent_at: null,
        cancelled_at: null,
        ...NO_WINNER,
        group_cuts: null,
      };
      if (sendNow) row.recipients = await countSelection(db, selectionOf(row), deps.dialect);
      await saveWithVariants(row, variants);
      return view(row);
    },

    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([listCampaigns(db, workspaceId, page), countCampaigns(db, workspaceId)]);
      return { items: rows.map(view), total, more };
    },

    get: async (workspaceId, id) => detailed(await find(workspaceId, id)),

    reach: async (workspaceId, id) => countSelection(db, selectionOf(await find(workspaceId, id)), deps.dialect),

    async preview(workspaceId, id, contact = {}) {
      const c = await find(workspaceId, id);
      const content = contentOf(c, undefined);
      const recipient = { email: contact.email ?? 'ada@example.com', first_name: contact.first_name ?? 'Ada', last_name: contact.last_name ?? 'Lovelace', external_id: null, metadata: contact.properties ?? null };
      // A link that goes nowhere: a preview must not unsubscribe anyone.
      const variables = subscriberVariables(c.variables, recipient, `${deps.config.http.publicUrl}/unsubscribe/preview`);
      const html = content.html === null ? null : renderTemplate(content.html, variables, 'html');
      return {
        object: 'broadcast_preview',
        id: c.id,
        subject: renderSubject(content.subject, variables),
        preview_text: content.previewText,
        html,
        text: content.text !== null ? renderTemplate(content.text, variables, 'text') : html === null ? null : plainTextOf(html),
      };
    },

    async update(workspace, id, changes, test) {
      const campaign = await find(workspace.id, id);
      requireDraft(campaign, 'changed');
      const merged = { ...inputOf(campaign), ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) };
      // A new template replaces the html copied from the previous one, and new html the template.
      if (changes.templateId !== undefined) merged.html = undefined;
      if (changes.html !== undefined) merged.templateId = undefined;
      // Variants not given stay as they are; null removes them and the test with them (the holdout stays).
      if (changes.variants === null) [merged.testPercentage, merged.winnerMetric, merged.testDuration] = [undefined, undefined, undefined];
      const { fields, variants } = await fieldsOf(workspace, merged, test, await listCampaignVariants(db, campaign.id));
      // The content copied from a template still names it, unless new content replaced it.
      if (changes.templateId === undefined && changes.html === undefined) fields.template_id = campaign.template_id;
      const updated = await db.transaction().execute(async (trx) => {
        if (!(await updateDraftCampaign(trx, campaign.id, { ...fields, updated_at: clock.now() }))) return false;
        await saveCampaignVariants(trx, campaign.id, variants);
        return true;
      });
      if (!updated) requireDraft(await find(workspace.id, id), 'changed');
      return view(await find(workspace.id, id));
    },

    async send(workspace, id, scheduledAt, test) {
      const campaign = await find(workspace.id, id);
      requireDraft(campaign, 'sent');
      await checkedSender(workspace, campaign.from_email, test);
      const at = checkSchedule(scheduledAt);
      const recipients = await countSelection(db, selectionOf(campaign), deps.dialect);
      if (!(await startDraftCampaign(db, campaign.id, { scheduled_at: at, recipients, test, updated_at: clock.now() }))) requireDraft(await find(workspace.id, id), 'sent');
      return view(await find(workspace.id, id));
    },

    async cancel(workspaceId, id) {
      const campaign = await find(workspaceId, id);
      const now = clock.now();
      if (notStarted(campaign) && (await unscheduleCampaign(db, campaign.id, now))) return view(await find(workspaceId, id));
      if (campaign.status !== 'queuing' && campaign.status !== 'testing' && campaign.status !== 'sending') {
        throw new AppError('invalid_state', `Campaign ${campaign.id} is ${campaign.status}: only a scheduled campaign or one being sent can be cancelled`);
      }
      const cancelled = await db.transaction().execute(async (trx) => {
        if (!(await markCampaignCancelled(trx, campaign.id, now))) return false;
        await cancelCampaignMessages(trx, campaign.id, now);
        return true;
      });
      if (!cancelled) throw new AppError('invalid_state', `Campaign ${campaign.id} finished before it could be cancelled`);
      logger.info({ campaignId: campaign.id, workspaceId }, 'campaign cancelled');
      return view(await find(workspaceId, id));
    },

    async remove(workspaceId, id) {
      const campaign = await find(workspaceId, id);
      if (campaign.status !== 'draft' && !notStarted(campaign)) {
        throw new AppError('invalid_state', `Campaign ${campaign.id} is ${campaign.status}: only a draft or a scheduled campaign not yet started can be deleted`);
      }
      if (!(await removeUnstartedCampaign(db, campaign.id))) throw new AppError('invalid_state', `Campaign ${campaign.id} started before it could be deleted`);
      return view(campaign);
    },

    async duplicate(workspace, id) {
      const campaign = await find(workspace.id, id);
      const now = clock.now();
      const row: Campaign = {
        ...campaign,
        id: newId(),
        name: `${campaign.name} (copy)`.slice(0, 200),
        status: 'draft',
        scheduled_at: null,
        recipients: 0,
        queued: 0,
        cursor: null,
        lease_owner: null,
        lease_until: null,
        created_at: now,
        updated_at: now,
        queued_at: null,
        sent_at: null,
        cancelled_at: null,
        ...NO_WINNER,
      };
      await saveWithVariants(row, await listCampaignVariants(db, campaign.id));
      return view(row);
    },

    async chooseWinner(workspaceId, id, variant) {
      const campaign = await find(workspaceId, id);
      const variants = await listCampaignVariants(db, campaign.id);
      if (variants.length === 0) throw new AppError('invalid_state', `Campaign ${campaign.id} has no A/B test`);
      if (!variants.some((v) => v.variant === variant)) throw validationError('variant', `must be one of ${variants.map((v) => v.variant).join(', ')}`);
      if (campaign.status !== 'testing' || !(await saveWinner(db, campaign.id, variant, 'manual', clock.now()))) {
        const current = await find(workspaceId, id);
        throw new AppError(
          'invalid_state',
          current.winner_variant
            ? `Campaign ${campaign.id} has its winner already: variant ${current.winner_variant} (${current.winner_chosen_by})`
            : `Campaign ${campaign.id} is ${current.status}: a winner is chosen once the variants are sent and before the test ends`,
        );
      }
      logger.info({ campaignId: campaign.id, workspaceId, variant }, 'A/B test winner chosen by hand');
      return view(await find(workspaceId, id));
    },
  };
}

/** A campaign row's test fields before a winner is known. */
const NO_WINNER = { winner_due_at: null, winner_variant: null, winner_chosen_at: null, winner_chosen_by: null } satisfies Partial<Campaign>;

const variantView = (c: Campaign, v: CampaignVariant, stats: GroupStats): VariantView => {
  const content = contentOf(c, v);
  return {
    id: v.variant,
    name: v.name,
    subject: content.subject,
    preview_text: content.previewText,
    from_name: content.fromName,
    html: content.html,
    text: content.text,
    template_id: v.template_id,
    stats,
  };
};

/** Milliseconds in the largest unit that divides them: `4 hours`, `90 minutes`. */
function formatDuration(ms: number): string {
  for (const [unit, size] of [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000]] as const) {
    if (ms % size === 0) return `${ms / size} ${unit}${ms === size ? '' : 's'}`;
  }
  return `${Math.round(ms / 1000)} seconds`;
}
