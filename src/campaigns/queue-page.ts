import { listContactPropertyFallbacks } from '../store/contact-properties.js';
import type { Config } from '../config/schema.js';
import { parseMailboxes } from '../messages/addresses.js';
import { domainOf } from '../shared/domain-name.js';
import { campaignSubject } from '../messages/campaign-message.js';
import type { MessageLinks } from '../messages/links.js';
import { selectionOf } from '../services/marketing/campaigns.js';
import { limitFor } from '../services/rate-limits.js';
import { emailRecords, type Prepared } from '../messages/email-records.js';
import type { Enqueue } from '../services/send/enqueue.js';
import type { Clock } from '../shared/clock.js';
import { classifyFault, isAppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { advanceCampaign, type Campaign } from '../store/campaigns.js';
import type { Db, Dialect } from '../store/infra/db.js';
import { listDomains } from '../store/domains.js';
import { listSelectionPage } from '../store/subscribers.js';
import { listDomainSuppressions } from '../store/suppressions.js';
import { listSubscribersSent, saveHoldouts, type CampaignVariant } from '../store/ab-tests.js';
import { contentOf } from '../messages/campaign-content.js';
import { groupOf, type Split } from './ab-group.js';
import type { Workspace } from '../store/workspaces.js';
import type { Hand } from '../workers/kernel.js';

export interface CampaignQueueDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  config: Config;
  links: MessageLinks;
  /** The one door into the queue: every page passes the workspace's marketing limit there. */
  enqueue: Enqueue;
  /** How often to look for a campaign whose time has come. */
  pollMs: number;
}

/** Subscribers queued per page (one transaction), at most: fewer when the workspace's marketing rate is lower. */
const CAMPAIGN_PAGE = 500;

/** The page was refused by the workspace's marketing rate: wait this long. */
export class RateLimited {
  constructor(readonly ms: number) {}
}
/** Another node took the campaign, or it was cancelled: the page is rolled back. */
export class NotOurs extends Error {}

export interface Queuing {
  campaign: Campaign;
  workspace: Workspace;
  /** An A/B test's variants by key (none: no test). */
  variants: Map<string, CampaignVariant>;
}

/**
 * Which recipients a pass over the list queues: everyone not held out (no test), the test's
 * groups with their variants, or, once the winner is known, the winner to those who got nothing
 * yet (the rest, and any who joined the list meanwhile) but the held out.
 */
export const splitOf = (c: Campaign, variants: Map<string, CampaignVariant>): Split => ({
  holdoutPercentage: c.holdout_percentage,
  testPercentage: c.test_percentage,
  variants: [...variants.keys()],
});

export const phaseOf = (c: Campaign): 'all' | 'test' | 'winner' =>
  c.test_percentage === null ? 'all' : c.winner_variant === null ? 'test' : 'winner';

/** What every recipient of one page shares: read once per page. */
interface Page extends Queuing {
  subscribers: Awaited<ReturnType<typeof listSelectionPage>>;
  now: number;
  phase: ReturnType<typeof phaseOf>;
  split: Split;
  domain: Awaited<ReturnType<typeof listDomains>>[number];
  suppressedDomains: Set<string>;
  /** The winner's phase: who got a variant already. */
  sentAlready: Set<string>;
  fallbacks: Awaited<ReturnType<typeof listContactPropertyFallbacks>>;
}

/** The next subscribers after the cursor, with what their messages share; null when none is left. */
async function readPage(deps: CampaignQueueDeps, q: Queuing): Promise<Page | null> {
  const { db } = deps;
  const { campaign, workspace } = q;
  const size = Math.max(1, Math.min(CAMPAIGN_PAGE, limitFor('send.marketing', workspace).limit));
  const subscribers = await listSelectionPage(db, selectionOf(campaign), campaign.cursor, size, deps.dialect);
  const now = deps.clock.now();
  if (subscribers.length === 0) return null;
  const domain = (await listDomains(db, workspace.id)).find((d) => d.name === domainOf(campaign.from_email));
  if (!domain) throw new Error(`campaign ${campaign.id}: the sending domain was removed`);
  const phase = phaseOf(campaign);
  return {
    ...q,
    subscribers,
    now,
    phase,
    split: splitOf(campaign, q.variants),
    domain,
    suppressedDomains: new Set((await listDomainSuppressions(db, workspace.id)).map((s) => s.address)),
    sentAlready:
      phase === 'winner'
        ? await listSubscribersSent(
            db,
            campaign.id,
            subscribers.map((s) => s.id),
          )
        : new Set<string>(),
    fallbacks: await listContactPropertyFallbacks(db, workspace.id),
  };
}

/** One subscriber's message, or why there is none: held out, outside this phase, suppressed. */
function messageFor(
  deps: CampaignQueueDeps,
  page: Page,
  subscriber: Page['subscribers'][number],
): Prepared | 'holdout' | null {
  const { campaign, workspace, phase, domain } = page;
  const group = groupOf(campaign.id, subscriber.id, page.split, campaign.group_cuts);
  if (group.kind === 'holdout') return 'holdout';
  if ((phase === 'test' && group.kind !== 'test') || page.sentAlready.has(subscriber.id)) return null;
  if (page.suppressedDomains.has(`@${domainOf(subscriber.email_key)}`)) return null;
  const variant =
    phase === 'test' && group.kind === 'test'
      ? { key: group.variant, phase: 'test' as const }
      : phase === 'winner'
        ? { key: campaign.winner_variant!, phase: 'winner' as const }
        : undefined;
  const content = contentOf(campaign, variant && page.variants.get(variant.key));
  const id = newId();
  const to = {
    name: [subscriber.first_name, subscriber.last_name].filter(Boolean).join(' '),
    address: subscriber.email,
  };
  return emailRecords(workspace.id, {
    id,
    now: page.now,
    input: {
      intake: 'campaign',
      test: campaign.test,
      type: 'marketing',
      metadata: campaign.metadata ?? undefined,
      externalId: campaign.external_id ?? undefined,
      campaignId: campaign.id,
      subscriberId: subscriber.id,
      variant,
    },
    domain,
    from: { name: content.fromName, address: campaign.from_email },
    to: [to],
    cc: [],
    bcc: [],
    replyTo: parseMailboxes('reply_to', campaign.reply_to ?? undefined),
    recipients: [subscriber.email],
    subject: campaignSubject(
      { ...campaign, subject: content.subject },
      subscriber,
      deps.links.unsubscribe(workspace.id, subscriber.email, id),
      page.fallbacks,
    ),
    messageId: `<${id}@${domain.name}>`,
    templateId: campaign.template_id,
    tags: campaign.tags ?? [],
    scheduledAt: null,
    // Campaigns are marketing: tracked as the configuration says (HTML only).
    track: {
      opens: content.html !== null && deps.config.tracking.opens,
      clicks: content.html !== null && deps.config.tracking.clicks,
    },
    ipPoolId: campaign.ip_pool_id,
    workspacePoolId: workspace.ip_pool_id,
  });
}

export type PageOutcome = 'more' | 'done' | 'lost' | RateLimited;

/**
 * Queues the page's messages and moves the cursor past it in one transaction; a refusal of
 * the marketing rate or a storage fault leaves the page to wait, a campaign another node took
 * (or a cancel) leaves it to that node.
 */
async function commitPage(
  hand: Hand,
  deps: CampaignQueueDeps,
  page: Page,
  prepared: Prepared[],
  holdouts: string[],
): Promise<PageOutcome> {
  const { campaign, workspace } = page;
  const cursor = page.subscribers[page.subscribers.length - 1]!.id;
  const advance = async (trx: Db) => {
    if (!(await advanceCampaign(trx, campaign.id, hand.owner, cursor, prepared.length))) throw new NotOurs();
    await saveHoldouts(trx, campaign.id, holdouts, page.now);
  };
  try {
    // A page whose every subscriber is suppressed still moves the cursor.
    if (prepared.length === 0) await deps.db.transaction().execute(advance);
    else await deps.enqueue(workspace, prepared, { inTransaction: advance });
  } catch (err) {
    if (isAppError(err) && err.code === 'rate_limited')
      return new RateLimited(Math.max(50, (err.retryAfter ?? 1) * 1000));
    // The disk below its reserve, the database away: the page waits, as for a rate limit.
    const fault = classifyFault(err);
    if (fault) {
      hand.log.warn({ campaignId: campaign.id, fault: fault.code }, 'campaign queuing waits: storage fault');
      return new RateLimited((fault.retryAfter ?? 5) * 1000);
    }
    if (!(err instanceof NotOurs)) throw err;
    hand.log.info(
      { campaignId: campaign.id },
      'campaign cancelled or taken over while it was queued; this node stopped queuing it',
    );
    return 'lost';
  }
  campaign.cursor = cursor;
  return 'more';
}

/** One page: the next subscribers after the cursor, as queued messages. */
export async function queuePage(hand: Hand, deps: CampaignQueueDeps, q: Queuing): Promise<PageOutcome> {
  const page = await readPage(deps, q);
  if (!page) return 'done';
  const holdouts: string[] = [];
  const prepared: Prepared[] = [];
  for (const subscriber of page.subscribers) {
    const message = messageFor(deps, page, subscriber);
    if (message === 'holdout') holdouts.push(subscriber.id);
    else if (message) prepared.push(message);
  }
  return commitPage(hand, deps, page, prepared, holdouts);
}
