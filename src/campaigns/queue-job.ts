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
import {
  advanceCampaign,
  claimQueuingCampaign,
  finishQueuingCampaign,
  saveGroupCuts,
  type Campaign,
} from '../store/campaigns.js';
import type { Db, Dialect } from '../store/infra/db.js';
import { listDomains } from '../store/domains.js';
import { listSelectionIds, listSelectionPage } from '../store/subscribers.js';
import { listDomainSuppressions } from '../store/suppressions.js';
import { listCampaignVariants, listSubscribersSent, saveHoldouts, type CampaignVariant } from '../store/ab-tests.js';
import { contentOf } from '../messages/campaign-content.js';
import { groupCuts, groupOf, type Split } from './ab-group.js';
import { findWorkspace, type Workspace } from '../store/workspaces.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';

interface CampaignQueueDeps {
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
const LEASE_MS = 30_000;
/** Pages per pass: a stop is noticed between passes. */
const PAGES_PER_PASS = 20;

/** The page was refused by the workspace's marketing rate: wait this long. */
class RateLimited {
  constructor(readonly ms: number) {}
}
/** Another node took the campaign, or it was cancelled: the page is rolled back. */
class NotOurs extends Error {}

interface Queuing {
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
const splitOf = (c: Campaign, variants: Map<string, CampaignVariant>): Split => ({
  holdoutPercentage: c.holdout_percentage,
  testPercentage: c.test_percentage,
  variants: [...variants.keys()],
});

/** Ids read per query when a campaign's groups are cut. */
const CUT_PAGE = 10_000;

/**
 * Cuts the campaign's recipients into groups of exact size (ab-group.ts) before its first page
 * is queued, and keeps the cuts on the campaign; a campaign without holdout or test needs none,
 * and one already under way keeps what it began with (its groups must not move).
 */
async function cutGroups(db: Db, dialect: Dialect, owner: string, q: Queuing): Promise<void> {
  const c = q.campaign;
  if (c.group_cuts !== null || c.cursor !== null || c.queued > 0 || phaseOf(c) === 'winner') return;
  if (c.holdout_percentage === 0 && c.test_percentage === null) return;
  const ids: string[] = [];
  for (let after: string | null = null; ;) {
    const page = await listSelectionIds(db, selectionOf(c), after, CUT_PAGE, dialect);
    ids.push(...page);
    if (page.length < CUT_PAGE) break;
    after = page[page.length - 1]!;
  }
  const cuts = groupCuts(c.id, ids, splitOf(c, q.variants));
  if (!(await saveGroupCuts(db, c.id, owner, cuts))) throw new NotOurs();
  c.group_cuts = cuts;
}

const phaseOf = (c: Campaign): 'all' | 'test' | 'winner' =>
  c.test_percentage === null ? 'all' : c.winner_variant === null ? 'test' : 'winner';

/**
 * The campaign queuer, a job on the worker kernel: claims a campaign being queued and writes
 * its recipients to the queue page by page, each page through the same door as every send
 * (services/send/enqueue.ts: the workspace's marketing rate, rows, metrics), with the cursor
 * moved in the page's transaction, so that after a crash queuing resumes exactly after the last
 * committed page. Messages are composed when first delivered (messages/campaign-message.ts).
 */
export function campaignQueueJob(hand: Hand, deps: CampaignQueueDeps): WorkerJob {
  const { db, clock, links } = deps;
  let current: Queuing | null = null;

  /** One page: the next subscribers after the cursor, as queued messages. */
  async function queuePage({
    campaign,
    workspace,
    variants,
  }: Queuing): Promise<'more' | 'done' | 'lost' | RateLimited> {
    const size = Math.max(1, Math.min(CAMPAIGN_PAGE, limitFor('send.marketing', workspace).limit));
    const page = await listSelectionPage(db, selectionOf(campaign), campaign.cursor, size, deps.dialect);
    const now = clock.now();
    if (page.length === 0) return 'done';
    const suppressedDomains = new Set((await listDomainSuppressions(db, workspace.id)).map((s) => s.address));
    const domain = (await listDomains(db, workspace.id)).find((d) => d.name === domainOf(campaign.from_email));
    if (!domain) throw new Error(`campaign ${campaign.id}: the sending domain was removed`);
    const tags = campaign.tags ?? [];
    const replyTo = parseMailboxes('reply_to', campaign.reply_to ?? undefined);
    const metadata = campaign.metadata ?? undefined;
    const phase = phaseOf(campaign);
    const split = splitOf(campaign, variants);
    const sentAlready =
      phase === 'winner'
        ? await listSubscribersSent(
            db,
            campaign.id,
            page.map((s) => s.id),
          )
        : new Set<string>();
    const holdouts: string[] = [];
    const prepared: Prepared[] = [];
    const fallbacks = await listContactPropertyFallbacks(db, workspace.id);
    for (const subscriber of page) {
      const group = groupOf(campaign.id, subscriber.id, split, campaign.group_cuts);
      if (group.kind === 'holdout') {
        holdouts.push(subscriber.id);
        continue;
      }
      if ((phase === 'test' && group.kind !== 'test') || sentAlready.has(subscriber.id)) continue;
      if (suppressedDomains.has(`@${domainOf(subscriber.email_key)}`)) continue;
      const variant =
        phase === 'test' && group.kind === 'test'
          ? { key: group.variant, phase: 'test' as const }
          : phase === 'winner'
            ? { key: campaign.winner_variant!, phase: 'winner' as const }
            : undefined;
      const content = contentOf(campaign, variant && variants.get(variant.key));
      const id = newId();
      const to = {
        name: [subscriber.first_name, subscriber.last_name].filter(Boolean).join(' '),
        address: subscriber.email,
      };
      prepared.push(
        emailRecords(workspace.id, {
          id,
          now,
          input: {
            intake: 'campaign',
            test: campaign.test,
            type: 'marketing',
            metadata,
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
          replyTo,
          recipients: [subscriber.email],
          subject: campaignSubject(
            { ...campaign, subject: content.subject },
            subscriber,
            links.unsubscribe(workspace.id, subscriber.email, id),
            fallbacks,
          ),
          messageId: `<${id}@${domain.name}>`,
          templateId: campaign.template_id,
          tags,
          scheduledAt: null,
          // Campaigns are marketing: tracked as the configuration says (HTML only).
          track: {
            opens: content.html !== null && deps.config.tracking.opens,
            clicks: content.html !== null && deps.config.tracking.clicks,
          },
          ipPoolId: campaign.ip_pool_id,
          workspacePoolId: workspace.ip_pool_id,
        }),
      );
    }
    const cursor = page[page.length - 1]!.id;
    const advance = async (trx: Db) => {
      if (!(await advanceCampaign(trx, campaign.id, hand.owner, cursor, prepared.length))) throw new NotOurs();
      await saveHoldouts(trx, campaign.id, holdouts, now);
    };
    try {
      // A page whose every subscriber is suppressed still moves the cursor.
      if (prepared.length === 0) await db.transaction().execute(advance);
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

  const drop = (q: Queuing) => {
    hand.settle([q.campaign.id]);
    current = null;
  };

  const done = async (q: Queuing) => {
    const now = clock.now();
    // The test's variants are out: the winner is due after the test's time, as a row (choose-winners.ts).
    const winnerDueAt = phaseOf(q.campaign) === 'test' ? now + q.campaign.test_duration_ms! : null;
    await finishQueuingCampaign(db, q.campaign.id, hand.owner, now, winnerDueAt);
    hand.settle([q.campaign.id]);
    hand.log.info({ campaignId: q.campaign.id, workspaceId: q.workspace.id }, 'campaign queued');
    current = null;
  };

  return {
    table: 'campaigns',
    wakeOn: ['campaigns'],
    leaseMs: LEASE_MS,
    graceMs: 10_000,
    async pass(): Promise<Next> {
      if (!current) {
        const campaign = await claimQueuingCampaign(db, deps.dialect, hand.lease());
        if (!campaign) return { sleep: deps.pollMs, onWork: 'now' };
        hand.hold([campaign.id]);
        const workspace = await findWorkspace(db, campaign.workspace_id);
        if (!workspace) {
          hand.settle([campaign.id]);
          return 'again';
        }
        current = {
          campaign,
          workspace,
          variants: new Map((await listCampaignVariants(db, campaign.id)).map((v) => [v.variant, v])),
        };
        try {
          await cutGroups(db, deps.dialect, hand.owner, current);
        } catch (err) {
          // Left to its lease, as a page that could not be queued.
          if (!(err instanceof NotOurs))
            hand.log.error({ err, campaignId: campaign.id }, 'could not cut the groups of a campaign');
          drop(current);
          return { sleep: deps.pollMs, onWork: 'ignore' };
        }
      }
      const q = current;
      for (let i = 0; i < PAGES_PER_PASS && !hand.stopping; i++) {
        let r: Awaited<ReturnType<typeof queuePage>>;
        try {
          r = await queuePage(q);
        } catch (err) {
          // Left to its lease: it runs out, and any node tries the campaign again.
          hand.log.error({ err, campaignId: q.campaign.id }, 'could not queue a page of a campaign');
          drop(q);
          return { sleep: deps.pollMs, onWork: 'ignore' };
        }
        if (r === 'done') {
          await done(q);
          return 'again';
        }
        if (r === 'lost') {
          drop(q);
          return 'again';
        }
        if (r instanceof RateLimited) return { sleep: r.ms, onWork: 'ignore' };
      }
      return 'again';
    },
    halt: () => [],
  };
}
