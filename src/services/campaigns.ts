import { recordEvent } from '../events/record-event.js';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import { findAudience } from '../store/audiences.js';
import {
  advanceCampaign,
  claimQueuingCampaign,
  countCampaign,
  countCampaigns,
  countUnfinished,
  findCampaign,
  findCampaignById,
  finishQueuingCampaign,
  listCampaigns,
  listSendingCampaigns,
  markCampaignSent,
  saveCampaign,
} from '../store/campaigns.js';
import { listDomains } from '../store/domains.js';
import { findEmailContent, saveEmailContent, saveEmails } from '../store/emails.js';
import { countSelection, findSubscriber, listKnownTags, listSelectionPage, type AudienceSelection } from '../store/subscribers.js';
import { listDomainSuppressions } from '../store/suppressions.js';
import type { Campaign, Email, Subscriber, Workspace } from '../store/tables.js';
import type { Db } from '../store/db.js';
import type { ServiceDeps } from './deps.js';
import { MAX_METADATA_BYTES } from './domains.js';
import { domainOf, hasLineBreak, parseMailbox, requireAddress, singleLine } from './send/addresses.js';
import { composeMessage } from './send/compose.js';
import { emailRecords, type Prepared } from './send/email-records.js';
import { renderSubject, renderTemplate, type Variables } from './send/render-template.js';
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
  templateId?: string | undefined;
  tags?: string[] | undefined;
  audienceId?: string | undefined;
  variables?: Variables | undefined;
  externalId?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export interface CampaignView {
  id: string;
  object: 'campaign';
  name: string;
  status: Campaign['status'];
  subject: string;
  from: string;
  tags: string[] | null;
  audience_id: string | null;
  template_id: string | null;
  external_id: string | null;
  metadata: Record<string, unknown> | null;
  test: boolean;
  recipients: number;
  created_at: string;
  queued_at: string | null;
  sent_at: string | null;
  counts?: Record<string, number>;
}

export interface CampaignService {
  /** Validates and records a campaign; its recipients are queued in the background. */
  create(workspace: Workspace, input: CampaignInput, test: boolean): Promise<CampaignView>;
  list(workspaceId: string, page: { limit: number; offset: number }): Promise<{ items: CampaignView[]; total: number }>;
  get(workspaceId: string, id: string): Promise<CampaignView>;
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
  unsubscribe: UnsubscribeService;
  tracking: TrackingService;
}

const parseJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/** A subscriber's own fields, over the campaign's variables (SPEC: variables merged with the subscriber). */
const subscriberVariables = (campaignVariables: Variables | null, s: Pick<Subscriber, 'email' | 'first_name' | 'last_name' | 'external_id' | 'metadata'>, unsubscribeUrl: string): Variables => ({
  ...campaignVariables,
  email: s.email,
  first_name: s.first_name ?? '',
  last_name: s.last_name ?? '',
  external_id: s.external_id ?? '',
  metadata: parseJson<Variables>(s.metadata) ?? {},
  unsubscribe_url: unsubscribeUrl,
});

export function createCampaignService(deps: CampaignServiceDeps): CampaignService {
  const { db, clock, logger, send, templates, unsubscribe } = deps;

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
    tags: parseJson<string[]>(c.tags),
    audience_id: c.audience_id,
    template_id: c.template_id,
    external_id: c.external_id,
    metadata: parseJson<Record<string, unknown>>(c.metadata),
    test: c.test === 1,
    recipients: c.recipients,
    created_at: toIso(c.created_at),
    queued_at: toIsoOrNull(c.queued_at),
    sent_at: toIsoOrNull(c.sent_at),
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

  const selectionOf = (c: Campaign): AudienceSelection => ({ workspaceId: c.workspace_id, tags: parseJson<string[]>(c.tags) ?? [], audienceId: c.audience_id });

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
          replyTo: [],
          recipients: [subscriber.email],
          subject: renderSubject(campaign.subject, subscriberVariables(variables, subscriber, unsubscribeUrl)),
          messageId: `<${id}@${domain.name}>`,
          templateId: campaign.template_id,
          tags,
          scheduledAt: null,
          // Campaigns are marketing: tracked as the configuration says.
          track: { opens: deps.config.tracking.opens, clicks: deps.config.tracking.clicks },
        }),
      );
    }
    const cursor = page[page.length - 1]!.id;
    await db.transaction().execute(async (trx) => {
      await saveEmails(trx, prepared);
      // The cursor moves in the same transaction as the messages: after a crash, queuing
      // resumes exactly after the last committed page.
      if (!(await advanceCampaign(trx, campaign.id, owner, cursor, prepared.length, now, LEASE_MS))) {
        throw new AppError('invalid_state', `campaign ${campaign.id} was taken over by another node`);
      }
    });
    campaign.cursor = cursor;
    deps.metrics?.emailsAccepted('campaign', 'marketing', prepared.length);
    return 'more';
  }

  return {
    async create(workspace, input, test) {
      const fromEmail = requireAddress('from_email', input.fromEmail);
      singleLine('from_name', input.fromName);
      if (input.fromName.length > 200) throw validationError('from_name', 'must be at most 200 characters');
      singleLine('subject', input.subject);
      if (input.subject.trim() === '' || input.subject.length > 998) throw validationError('subject', 'must be 1 to 998 characters');
      if (input.html === undefined && input.templateId === undefined) throw validationError('html', 'is required if templateId is absent');
      if (input.html !== undefined && input.templateId !== undefined) throw validationError('templateId', 'cannot be combined with html: give exactly one');
      if (input.html !== undefined && input.html.trim() === '') throw validationError('html', 'must not be empty');
      if (input.metadata !== undefined && JSON.stringify(input.metadata).length > MAX_METADATA_BYTES) throw validationError('metadata', `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
      if (input.externalId !== undefined && (input.externalId.length > 255 || hasLineBreak(input.externalId))) throw validationError('external_id', 'must be one line of at most 255 characters');
      const name = input.name?.trim() || `${input.subject.slice(0, 60)} (${toIso(clock.now()).slice(0, 16).replace('T', ' ')})`;
      if (name.length > 200) throw validationError('name', 'must be at most 200 characters');
      await send.checkSender(workspace, fromEmail, test).catch((err: unknown) => {
        throw err instanceof AppError ? new AppError(err.code, err.message.replace(/^from:/, 'from_email:'), { field: 'from_email' }) : err;
      });
      let html = input.html;
      if (input.templateId !== undefined) {
        if (!isUuid(input.templateId)) throw validationError('templateId', `template ${input.templateId} not found`);
        // The template is copied: editing it later does not change a campaign being sent.
        html = (await templates.get(workspace.id, input.templateId).catch(() => {
          throw validationError('templateId', `template ${input.templateId} not found`);
        })).html;
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
      const now = clock.now();
      const row: Campaign = {
        id: newId(),
        workspace_id: workspace.id,
        name,
        status: 'queuing',
        subject: input.subject,
        from_name: input.fromName,
        from_email: fromEmail,
        html: html!,
        template_id: input.templateId ?? null,
        tags: tags.length > 0 ? JSON.stringify(tags) : null,
        audience_id: input.audienceId ?? null,
        variables: input.variables === undefined ? null : JSON.stringify(input.variables),
        external_id: input.externalId ?? null,
        metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
        test: test ? 1 : 0,
        recipients: 0,
        queued: 0,
        cursor: null,
        lease_owner: null,
        lease_until: null,
        created_at: now,
        queued_at: null,
        sent_at: null,
      };
      row.recipients = await countSelection(db, selectionOf(row));
      await saveCampaign(db, row);
      return view(row);
    },

    async list(workspaceId, page) {
      const [rows, total] = await Promise.all([listCampaigns(db, workspaceId, page.limit, page.offset), countCampaigns(db, workspaceId)]);
      return { items: rows.map(view), total };
    },

    async get(workspaceId, id) {
      const found = isUuid(id) ? await findCampaign(db, workspaceId, id) : undefined;
      if (!found) throw notFound(`Campaign ${id}`);
      return withCounts(found);
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
      const personal = renderTemplate(campaign.html ?? '', subscriberVariables(parseJson<Variables>(campaign.variables), subscriber, unsubscribeUrl), 'html');
      const raw = await composeMessage({
        from: { name: campaign.from_name, address: campaign.from_email },
        to: [to],
        cc: [],
        replyTo: [],
        subject: email.subject,
        html: track.opens || track.clicks ? addTracking(personal, deps.tracking.links(email.id, track)) : personal,
        headers: listUnsubscribeHeaders(unsubscribeUrl),
        attachments: [],
        messageId: email.message_id,
        date: new Date(email.created_at),
      });
      return saveEmailContent(db, email.id, raw);
    },
  };
}
