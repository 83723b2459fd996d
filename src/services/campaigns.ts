import { recordEvent } from '../events/record-event.js';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import { findAudience } from '../store/audiences.js';
import {
  advanceCampaign,
  cancelCampaignMessages,
  claimQueuingCampaign,
  countCampaign,
  countCampaigns,
  countUnfinished,
  findCampaign,
  findCampaignById,
  finishQueuingCampaign,
  listCampaigns,
  listSendingCampaigns,
  markCampaignCancelled,
  markCampaignSent,
  removeUnstartedCampaign,
  saveCampaign,
  startDraftCampaign,
  unscheduleCampaign,
  updateDraftCampaign,
} from '../store/campaigns.js';
import { listDomains } from '../store/domains.js';
import { findEmailContent, saveEmailContent, saveEmails } from '../store/emails.js';
import { countSelection, findSubscriber, listKnownTags, listSelectionPage, type AudienceSelection } from '../store/subscribers.js';
import { listDomainSuppressions } from '../store/suppressions.js';
import type { Campaign, Email, Subscriber, Workspace } from '../store/tables.js';
import type { Db } from '../store/db.js';
import type { ServiceDeps } from './deps.js';
import { checkMetadata } from './metadata.js';
import { domainOf, hasLineBreak, parseMailbox, parseMailboxes, requireAddress, singleLine } from './send/addresses.js';
import { emailRecords, type Prepared } from './send/email-records.js';
import { escapeHtml, renderSubject, renderTemplate, type Variables } from './send/render-template.js';
import type { TopicService } from './topics.js';
import type { ListPage, Listed } from '../store/list-page.js';
import { listUnsubscribeHeaders, type SendService } from './send/send-email.js';
import type { TemplateService } from './templates.js';
import type { TrackingService } from './tracking.js';
import { addTracking } from './send/add-tracking.js';
import type { UnsubscribeService } from './unsubscribe.js';

/** Subscribers queued per transaction while a campaign is written to the queue. */
export const CAMPAIGN_PAGE = 500;
/** How long a node holds a campaign it is queuing before another may take over. */
const LEASE_MS = 60_000;

export interface CampaignInput {
  name?: string | undefined;
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
  test: boolean;
  recipients: number;
  created_at: string;
  updated_at: string;
  /** When queuing starts (a scheduled campaign); null: as soon as it is sent. */
  scheduled_at: string | null;
  queued_at: string | null;
  sent_at: string | null;
  cancelled_at: string | null;
  counts?: Record<string, number>;
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
  /** Queues the next page(s) of one campaign this node can claim; false when there was none. */
  queueNext(owner: string): Promise<boolean>;
  /** Marks campaigns whose every message is final as sent (and emits campaign.sent). */
  finishSent(): Promise<number>;
  /** The message of a queued email, composing a campaign message on first use. */
  contentFor(email: Email): Promise<Buffer | undefined>;
}

export interface CampaignServiceDeps extends ServiceDeps {
  send: SendService;
  templates: TemplateService;
  topics: TopicService;
  unsubscribe: UnsubscribeService;
  tracking: TrackingService;
}

/** Most characters of a preheader. */
const MAX_PREVIEW_TEXT = 500;
/** How far ahead a campaign may be scheduled (as emails). */
const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

const parseJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/**
 * A subscriber's own fields, over the campaign's variables (SPEC: variables merged with the
 * subscriber), over its metadata. Resend's names too: `FIRST_NAME`, `LAST_NAME`, `EMAIL`,
 * `RESEND_UNSUBSCRIBE_URL` and `contact.*` (with the contact's properties).
 */
function subscriberVariables(campaignVariables: Variables | null, s: Pick<Subscriber, 'email' | 'first_name' | 'last_name' | 'external_id' | 'metadata'>, unsubscribeUrl: string): Variables {
  const metadata = parseJson<Variables>(s.metadata) ?? {};
  const own = { email: s.email, first_name: s.first_name ?? '', last_name: s.last_name ?? '' };
  return {
    ...metadata,
    ...campaignVariables,
    ...own,
    external_id: s.external_id ?? '',
    metadata,
    unsubscribe_url: unsubscribeUrl,
    FIRST_NAME: own.first_name,
    LAST_NAME: own.last_name,
    EMAIL: own.email,
    RESEND_UNSUBSCRIBE_URL: unsubscribeUrl,
    contact: { ...metadata, ...own },
  };
}

/** A hidden preheader at the start of the body: inboxes show it beside the subject. */
function withPreheader(html: string, previewText: string | null): string {
  if (!previewText) return html;
  const hidden = `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(previewText)}</div>`;
  const body = /<body\b[^>]*>/i.exec(html);
  return body ? html.slice(0, body.index + body[0].length) + hidden + html.slice(body.index + body[0].length) : hidden + html;
}

export function createCampaignService(deps: CampaignServiceDeps): CampaignService {
  const { db, clock, logger, send, templates, topics, unsubscribe } = deps;

  /**
   * Campaigns as their messages are composed at delivery: a sending campaign's content does
   * not change, and reading it once per message was one statement per recipient. Kept a
   * minute, for the few campaigns sending at once.
   */
  const campaigns = new Map<string, { until: number; campaign: Promise<Awaited<ReturnType<typeof findCampaignById>>> }>();
  const campaignOf = (id: string) => {
    const now = clock.now();
    const hit = campaigns.get(id);
    if (hit && hit.until > now) return hit.campaign;
    if (campaigns.size >= 100) campaigns.delete(campaigns.keys().next().value!);
    const campaign = findCampaignById(db, id);
    campaigns.set(id, { until: now + 60_000, campaign });
    void campaign.catch(() => campaigns.delete(id));
    return campaign;
  };

  const view = (c: Campaign): CampaignView => ({
    id: c.id,
    object: 'campaign',
    name: c.name,
    status: c.status,
    subject: c.subject,
    from: c.from_name ? `${JSON.stringify(c.from_name)} <${c.from_email}>` : c.from_email,
    reply_to: parseJson<string[]>(c.reply_to),
    preview_text: c.preview_text,
    html: c.html,
    text: c.text,
    tags: parseJson<string[]>(c.tags),
    audience_id: c.audience_id,
    topic_id: c.topic_id,
    template_id: c.template_id,
    external_id: c.external_id,
    metadata: parseJson<Record<string, unknown>>(c.metadata),
    test: c.test === 1,
    recipients: c.recipients,
    created_at: toIso(c.created_at),
    updated_at: toIso(c.updated_at ?? c.created_at),
    scheduled_at: toIsoOrNull(c.scheduled_at),
    queued_at: toIsoOrNull(c.queued_at),
    sent_at: toIsoOrNull(c.sent_at),
    cancelled_at: toIsoOrNull(c.cancelled_at),
  });

  // `from` is the transaction when called inside one: SQLite has one connection, and a query on
  // `db` from inside a transaction would wait for it forever.
  const withCounts = async (c: Campaign, from: Db = db): Promise<CampaignView> => {
    const counts = await countCampaign(from, c.id);
    const s = (k: string) => counts.byStatus[k] ?? 0;
    return {
      ...view(c),
      counts: {
        queued: c.queued,
        pending: s('queued') + s('scheduled') + s('sending') + s('deferred'),
        delivered: s('delivered'),
        bounced: s('bounced'),
        failed: s('failed'),
        suppressed: s('suppressed'),
        cancelled: s('cancelled'),
        opened: counts.opened,
        clicked: counts.clicked,
        unsubscribed: counts.unsubscribed,
      },
    };
  };

  const selectionOf = (c: Campaign): AudienceSelection => ({ workspaceId: c.workspace_id, tags: parseJson<string[]>(c.tags) ?? [], audienceId: c.audience_id, topicId: c.topic_id });

  /** One page of a campaign: the next subscribers after the cursor, as queued messages. */
  async function queuePage(campaign: Campaign, owner: string, workspace: Workspace): Promise<'more' | 'done'> {
    const page = await listSelectionPage(db, selectionOf(campaign), campaign.cursor, CAMPAIGN_PAGE);
    const now = clock.now();
    if (page.length === 0) {
      await finishQueuingCampaign(db, campaign.id, owner, now);
      return 'done';
    }
    const suppressedDomains = new Set((await listDomainSuppressions(db, workspace.id)).map((s) => s.address));
    const domain = (await listDomains(db, workspace.id)).find((d) => d.name === domainOf(campaign.from_email));
    if (!domain) throw new AppError('forbidden', `campaign ${campaign.id}: the sending domain was removed`);
    const tags = parseJson<string[]>(campaign.tags) ?? [];
    const from = { name: campaign.from_name, address: campaign.from_email };
    const replyTo = parseMailboxes('reply_to', parseJson<string[]>(campaign.reply_to) ?? undefined);
    const variables = parseJson<Variables>(campaign.variables);
    const metadata = parseJson<Record<string, unknown>>(campaign.metadata) ?? undefined;
    const prepared: Prepared[] = [];
    for (const subscriber of page) {
      if (suppressedDomains.has(`@${domainOf(subscriber.email_key)}`)) continue;
      const id = newId();
      const unsubscribeUrl = unsubscribe.link(workspace.id, subscriber.email, id);
      const to = { name: [subscriber.first_name, subscriber.last_name].filter(Boolean).join(' '), address: subscriber.email };
      prepared.push(
        emailRecords(workspace.id, {
          id,
          now,
          input: {
            intake: 'campaign',
            test: campaign.test === 1,
            from,
            to: [to],
            type: 'marketing',
            metadata,
            externalId: campaign.external_id ?? undefined,
            campaignId: campaign.id,
            subscriberId: subscriber.id,
          },
          domain,
          from,
          to: [to],
          cc: [],
          bcc: [],
          replyTo,
          recipients: [subscriber.email],
          subject: renderSubject(campaign.subject, subscriberVariables(variables, subscriber, unsubscribeUrl)),
          messageId: `<${id}@${domain.name}>`,
          templateId: campaign.template_id,
          tags,
          scheduledAt: null,
          // Campaigns are marketing: tracked as the configuration says (HTML only).
          track: { opens: campaign.html !== null && deps.config.tracking.opens, clicks: campaign.html !== null && deps.config.tracking.clicks },
        }),
      );
    }
    const cursor = page[page.length - 1]!.id;
    const advanced = await db.transaction().execute(async (trx) => {
      // The cursor moves in the same transaction as the messages: after a crash, queuing
      // resumes exactly after the last committed page. A cancelled campaign (or one another
      // node took over) moves no more: the page is rolled back.
      if (!(await advanceCampaign(trx, campaign.id, owner, cursor, prepared.length, now, LEASE_MS))) return false;
      await saveEmails(trx, prepared);
      return true;
    });
    if (!advanced) {
      if ((await findCampaignById(db, campaign.id))?.status === 'cancelled') return 'done';
      throw new AppError('invalid_state', `campaign ${campaign.id} was taken over by another node`);
    }
    campaign.cursor = cursor;
    deps.metrics?.emailsAccepted('campaign', 'marketing', prepared.length);
    return 'more';
  }

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

  /** Checks a whole campaign's content and recipients; returns its row fields. */
  async function fieldsOf(workspace: Workspace, input: CampaignInput, test: boolean) {
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
      const template = await templates.content(workspace.id, input.templateId).catch(() => {
        throw validationError('templateId', `template ${input.templateId} not found`);
      });
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
    return {
      name,
      subject: input.subject,
      from_name: input.fromName,
      from_email: fromEmail,
      html,
      text,
      reply_to: replyTo.length > 0 ? JSON.stringify(replyTo.map((a) => (a.name ? `${JSON.stringify(a.name)} <${a.address}>` : a.address))) : null,
      preview_text: input.previewText ?? null,
      template_id: input.templateId ?? null,
      tags: tags.length > 0 ? JSON.stringify(tags) : null,
      audience_id: input.audienceId ?? null,
      topic_id: input.topicId ?? null,
      variables: input.variables === undefined ? null : JSON.stringify(input.variables),
      external_id: input.externalId ?? null,
      metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
    };
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
    tags: parseJson<string[]>(c.tags) ?? undefined,
    audienceId: c.audience_id ?? undefined,
    topicId: c.topic_id ?? undefined,
    replyTo: parseJson<string[]>(c.reply_to) ?? undefined,
    previewText: c.preview_text ?? undefined,
    variables: parseJson<Variables>(c.variables) ?? undefined,
    externalId: c.external_id ?? undefined,
    metadata: parseJson<Record<string, unknown>>(c.metadata) ?? undefined,
  });

  const requireDraft = (c: Campaign, doing: string): void => {
    if (c.status !== 'draft') throw new AppError('invalid_state', `Campaign ${c.id} is ${c.status}: only a draft can be ${doing}`);
  };

  /** Whether a campaign is waiting for its time and nothing of it was queued yet. */
  const notStarted = (c: Campaign): boolean => c.status === 'queuing' && c.cursor === null && c.lease_owner === null && c.scheduled_at !== null && c.scheduled_at > clock.now();

  return {
    async create(workspace, input, test, options = {}) {
      const fields = await fieldsOf(workspace, input, test);
      const sendNow = options.send ?? true;
      if (!sendNow && options.scheduledAt != null) throw validationError('scheduled_at', 'applies only to a campaign that is sent (send: true)');
      const now = clock.now();
      const row: Campaign = {
        id: newId(),
        workspace_id: workspace.id,
        status: sendNow ? 'queuing' : 'draft',
        ...fields,
        scheduled_at: sendNow ? checkSchedule(options.scheduledAt) : null,
        test: test ? 1 : 0,
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
      };
      if (sendNow) row.recipients = await countSelection(db, selectionOf(row));
      await saveCampaign(db, row);
      return view(row);
    },

    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([listCampaigns(db, workspaceId, page), countCampaigns(db, workspaceId)]);
      return { items: rows.map(view), total, more };
    },

    get: async (workspaceId, id) => withCounts(await find(workspaceId, id)),

    async update(workspace, id, changes, test) {
      const campaign = await find(workspace.id, id);
      requireDraft(campaign, 'changed');
      const merged = { ...inputOf(campaign), ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) } as CampaignInput;
      // A new template replaces the html copied from the previous one, and new html the template.
      if (changes.templateId !== undefined) merged.html = undefined;
      if (changes.html !== undefined) merged.templateId = undefined;
      const fields = await fieldsOf(workspace, merged, test);
      // The content copied from a template still names it, unless new content replaced it.
      if (changes.templateId === undefined && changes.html === undefined) fields.template_id = campaign.template_id;
      if (!(await updateDraftCampaign(db, campaign.id, { ...fields, updated_at: clock.now() }))) requireDraft(await find(workspace.id, id), 'changed');
      return view(await find(workspace.id, id));
    },

    async send(workspace, id, scheduledAt, test) {
      const campaign = await find(workspace.id, id);
      requireDraft(campaign, 'sent');
      await checkedSender(workspace, campaign.from_email, test);
      const at = checkSchedule(scheduledAt);
      const recipients = await countSelection(db, selectionOf(campaign));
      if (!(await startDraftCampaign(db, campaign.id, { scheduled_at: at, recipients, test: test ? 1 : 0, updated_at: clock.now() }))) requireDraft(await find(workspace.id, id), 'sent');
      return view(await find(workspace.id, id));
    },

    async cancel(workspaceId, id) {
      const campaign = await find(workspaceId, id);
      const now = clock.now();
      if (notStarted(campaign) && (await unscheduleCampaign(db, campaign.id, now))) return view(await find(workspaceId, id));
      if (campaign.status !== 'queuing' && campaign.status !== 'sending') {
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
      };
      await saveCampaign(db, row);
      return view(row);
    },

    async queueNext(owner) {
      const campaign = await claimQueuingCampaign(db, owner, clock.now(), LEASE_MS);
      if (!campaign) return false;
      const workspace = (await db.selectFrom('workspaces').selectAll().where('id', '=', campaign.workspace_id).executeTakeFirst())!;
      // Bounded: a page per iteration, a few thousand pages at most for the biggest lists.
      for (let i = 0; i < 100_000; i++) {
        if ((await queuePage(campaign, owner, workspace)) === 'done') break;
      }
      logger.info({ campaignId: campaign.id, workspaceId: campaign.workspace_id }, 'campaign queued');
      return true;
    },

    async finishSent() {
      let finished = 0;
      for (const campaign of await listSendingCampaigns(db, 50)) {
        if ((await countUnfinished(db, campaign.id)) > 0) continue;
        const now = clock.now();
        const done = await db.transaction().execute(async (trx) => {
          if (!(await markCampaignSent(trx, campaign.id, now))) return false;
          const sent = await withCounts({ ...campaign, status: 'sent', sent_at: now }, trx);
          await recordEvent(trx, {
            workspaceId: campaign.workspace_id,
            type: 'campaign.sent',
            data: { campaign_id: campaign.id, name: campaign.name, recipients: campaign.queued, counts: sent.counts, timestamp: toIso(now) },
            at: now,
          });
          return true;
        });
        if (done) finished++;
      }
      return finished;
    },

    async contentFor(email) {
      const stored = await findEmailContent(db, email.id);
      if (stored || !email.campaign_id) return stored;
      const campaign = await campaignOf(email.campaign_id);
      if (!campaign) return undefined;
      const to = parseMailbox('to', (JSON.parse(email.to_addresses) as string[])[0]!);
      const subscriber = (email.subscriber_id ? await findSubscriber(db, email.workspace_id, email.subscriber_id) : undefined) ?? {
        email: to.address,
        first_name: null,
        last_name: null,
        external_id: null,
        metadata: null,
      };
      const unsubscribeUrl = unsubscribe.link(email.workspace_id, to.address, email.id);
      const track = { opens: email.track_opens === 1, clicks: email.track_clicks === 1 };
      const variables = subscriberVariables(parseJson<Variables>(campaign.variables), subscriber, unsubscribeUrl);
      const personal = campaign.html === null ? undefined : withPreheader(renderTemplate(campaign.html, variables, 'html'), campaign.preview_text);
      const raw = await deps.compose({
        from: { name: campaign.from_name, address: campaign.from_email },
        to: [to],
        cc: [],
        replyTo: parseMailboxes('reply_to', parseJson<string[]>(campaign.reply_to) ?? undefined),
        subject: email.subject,
        html: personal !== undefined && (track.opens || track.clicks) ? addTracking(personal, deps.tracking.links(email.id, track)) : personal,
        text: campaign.text === null ? undefined : renderTemplate(campaign.text, variables, 'text'),
        headers: listUnsubscribeHeaders(unsubscribeUrl),
        attachments: [],
        messageId: email.message_id,
        date: new Date(email.created_at),
      });
      return saveEmailContent(db, email.id, raw);
    },
  };
}
