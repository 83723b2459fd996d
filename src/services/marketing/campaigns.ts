import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import {
  cancelCampaignMessages,
  countCampaigns,
  findCampaign,
  listCampaigns,
  markCampaignCancelled,
  removeUnstartedCampaign,
  saveCampaign,
  startDraftCampaign,
  unscheduleCampaign,
  updateDraftCampaign,
  type Campaign,
} from '../../store/campaigns.js';
import { countSelection, type AudienceSelection } from '../../store/subscribers.js';
import type { Workspace } from '../../store/workspaces.js';
import { listCampaignVariants, saveCampaignVariants, saveWinner } from '../../store/ab-tests.js';
import type { VariantRow } from './ab-test.js';
import { contentOf } from '../../messages/campaign-content.js';
import type { ServiceDeps } from '../deps.js';
import { renderSubject, renderTemplate } from '../../messages/render-template.js';
import { subscriberVariables } from '../../messages/campaign-message.js';
import { plainTextOf } from '../../messages/plain-text.js';
import type { TopicService } from './topics.js';
import type { ListPage, Listed } from '../../store/infra/list-page.js';
import type { SendService } from '../send/send-email.js';
import type { TemplateService } from '../templates.js';
import { campaignView, detailedCampaignView, type CampaignView } from './campaign-view.js';
import { campaignFields, checkedSender, checkSchedule, inputOf, type CampaignInput } from './campaign-fields.js';

export type { CampaignInput } from './campaign-fields.js';

export type { CampaignView } from './campaign-view.js';

interface CreateOptions {
  /** false: a draft, sent later by `send` (default true: queue now). */
  send?: boolean | undefined;
  /** Queue at this time rather than now (epoch ms). */
  scheduledAt?: number | null | undefined;
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

interface PreviewContact {
  email?: string | undefined;
  first_name?: string | undefined;
  last_name?: string | undefined;
  properties?: Record<string, unknown> | undefined;
}

interface CampaignPreview {
  object: 'broadcast_preview';
  id: string;
  subject: string;
  preview_text: string | null;
  html: string | null;
  text: string | null;
}

interface CampaignServiceDeps extends ServiceDeps {
  send: SendService;
  templates: TemplateService;
  topics: TopicService;
}

/** The subscribers a campaign goes to. */
export const selectionOf = (c: Campaign): AudienceSelection => ({
  workspaceId: c.workspace_id,
  tags: c.tags ?? [],
  audienceId: c.audience_id,
  topicId: c.topic_id,
});

export function createCampaignService(deps: CampaignServiceDeps): CampaignService {
  const { db, clock, logger, send } = deps;
  const view = campaignView;

  const find = async (workspaceId: string, id: string): Promise<Campaign> => {
    const found = isUuid(id) ? await findCampaign(db, workspaceId, id) : undefined;
    if (!found) throw notFound(`Campaign ${id}`);
    return found;
  };

  /** Writes a new campaign and its variants together. */
  const saveWithVariants = (row: Campaign, variants: readonly VariantRow[]) =>
    db.transaction().execute(async (trx) => {
      await saveCampaign(trx, row);
      await saveCampaignVariants(trx, row.id, variants);
    });

  const requireDraft = (c: Campaign, doing: string): void => {
    if (c.status !== 'draft')
      throw new AppError('invalid_state', `Campaign ${c.id} is ${c.status}: only a draft can be ${doing}`);
  };

  /** Whether a campaign is waiting for its time and nothing of it was queued yet. */
  const notStarted = (c: Campaign): boolean =>
    c.status === 'queuing' &&
    c.cursor === null &&
    c.lease_owner === null &&
    c.scheduled_at !== null &&
    c.scheduled_at > clock.now();

  return {
    async create(workspace, input, test, options = {}) {
      const { fields, variants } = await campaignFields(deps, workspace, input, test);
      const sendNow = options.send ?? true;
      if (!sendNow && options.scheduledAt != null)
        throw validationError('scheduled_at', 'applies only to a campaign that is sent (send: true)');
      const now = clock.now();
      const row: Campaign = {
        workspace_id: workspace.id,
        ...fields,
        test,
        ...unsent(now),
        status: sendNow ? 'queuing' : 'draft',
        scheduled_at: sendNow ? checkSchedule(now, options.scheduledAt) : null,
      };
      if (sendNow) row.recipients = await countSelection(db, selectionOf(row), deps.dialect);
      await saveWithVariants(row, variants);
      return view(row);
    },

    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([
        listCampaigns(db, workspaceId, page),
        countCampaigns(db, workspaceId),
      ]);
      return { items: rows.map(view), total, more };
    },

    get: async (workspaceId, id) => detailedCampaignView(db, deps.dialect, await find(workspaceId, id)),

    reach: async (workspaceId, id) => countSelection(db, selectionOf(await find(workspaceId, id)), deps.dialect),

    async preview(workspaceId, id, contact = {}) {
      const c = await find(workspaceId, id);
      const content = contentOf(c, undefined);
      const recipient = {
        email: contact.email ?? 'ada@example.com',
        first_name: contact.first_name ?? 'Ada',
        last_name: contact.last_name ?? 'Lovelace',
        external_id: null,
        metadata: contact.properties ?? null,
      };
      // A link that goes nowhere: a preview must not unsubscribe anyone.
      const variables = subscriberVariables(
        c.variables,
        recipient,
        `${deps.config.http.publicUrl}/unsubscribe/preview`,
      );
      const html = content.html === null ? null : renderTemplate(content.html, variables, 'html');
      return {
        object: 'broadcast_preview',
        id: c.id,
        subject: renderSubject(content.subject, variables),
        preview_text: content.previewText,
        html,
        text:
          content.text !== null
            ? renderTemplate(content.text, variables, 'text')
            : html === null
              ? null
              : await plainTextOf(html),
      };
    },

    async update(workspace, id, changes, test) {
      const campaign = await find(workspace.id, id);
      requireDraft(campaign, 'changed');
      const merged = {
        ...inputOf(campaign),
        ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)),
      };
      // A new template replaces the html copied from the previous one, and new html the template.
      if (changes.templateId !== undefined) merged.html = undefined;
      if (changes.html !== undefined) merged.templateId = undefined;
      // Variants not given stay as they are; null removes them and the test with them (the holdout stays).
      if (changes.variants === null)
        [merged.testPercentage, merged.winnerMetric, merged.testDuration] = [undefined, undefined, undefined];
      const { fields, variants } = await campaignFields(
        deps,
        workspace,
        merged,
        test,
        await listCampaignVariants(db, campaign.id),
      );
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
      await checkedSender(send, workspace, campaign.from_email, test);
      const at = checkSchedule(clock.now(), scheduledAt);
      const recipients = await countSelection(db, selectionOf(campaign), deps.dialect);
      if (!(await startDraftCampaign(db, campaign.id, { scheduled_at: at, recipients, test, updated_at: clock.now() })))
        requireDraft(await find(workspace.id, id), 'sent');
      return view(await find(workspace.id, id));
    },

    async cancel(workspaceId, id) {
      const campaign = await find(workspaceId, id);
      const now = clock.now();
      if (notStarted(campaign) && (await unscheduleCampaign(db, campaign.id, now)))
        return view(await find(workspaceId, id));
      if (campaign.status !== 'queuing' && campaign.status !== 'testing' && campaign.status !== 'sending') {
        throw new AppError(
          'invalid_state',
          `Campaign ${campaign.id} is ${campaign.status}: only a scheduled campaign or one being sent can be cancelled`,
        );
      }
      const cancelled = await db.transaction().execute(async (trx) => {
        if (!(await markCampaignCancelled(trx, campaign.id, now))) return false;
        await cancelCampaignMessages(trx, campaign.id, now);
        return true;
      });
      if (!cancelled)
        throw new AppError('invalid_state', `Campaign ${campaign.id} finished before it could be cancelled`);
      logger.info({ campaignId: campaign.id, workspaceId }, 'campaign cancelled');
      return view(await find(workspaceId, id));
    },

    async remove(workspaceId, id) {
      const campaign = await find(workspaceId, id);
      if (campaign.status !== 'draft' && !notStarted(campaign)) {
        throw new AppError(
          'invalid_state',
          `Campaign ${campaign.id} is ${campaign.status}: only a draft or a scheduled campaign not yet started can be deleted`,
        );
      }
      if (!(await removeUnstartedCampaign(db, campaign.id)))
        throw new AppError('invalid_state', `Campaign ${campaign.id} started before it could be deleted`);
      return view(campaign);
    },

    async duplicate(workspace, id) {
      const campaign = await find(workspace.id, id);
      const now = clock.now();
      const row: Campaign = { ...campaign, ...unsent(now), name: `${campaign.name} (copy)`.slice(0, 200) };
      await saveWithVariants(row, await listCampaignVariants(db, campaign.id));
      return view(row);
    },

    async chooseWinner(workspaceId, id, variant) {
      const campaign = await find(workspaceId, id);
      const variants = await listCampaignVariants(db, campaign.id);
      if (variants.length === 0) throw new AppError('invalid_state', `Campaign ${campaign.id} has no A/B test`);
      if (!variants.some((v) => v.variant === variant))
        throw validationError('variant', `must be one of ${variants.map((v) => v.variant).join(', ')}`);
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

/**
 * A new campaign row's state: a draft nothing of which was queued, with no A/B cuts and no
 * winner. A copy starts here too: the cuts of the one it copies were drawn for its id.
 */
const unsent = (now: number) =>
  ({
    id: newId(),
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
    winner_due_at: null,
    winner_variant: null,
    winner_chosen_at: null,
    winner_chosen_by: null,
    group_cuts: null,
  }) satisfies Partial<Campaign>;
