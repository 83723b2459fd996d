import { selectionOf } from '../services/marketing/campaigns.js';
import { claimQueuingCampaign, finishQueuingCampaign, saveGroupCuts } from '../store/campaigns.js';
import type { Db, Dialect } from '../store/infra/db.js';
import { listSelectionIds } from '../store/subscribers.js';
import { listCampaignVariants } from '../store/ab-tests.js';
import { groupCuts } from './ab-group.js';
import { findWorkspace } from '../store/workspaces.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';

import {
  NotOurs,
  phaseOf,
  queuePage,
  RateLimited,
  splitOf,
  type CampaignQueueDeps,
  type PageOutcome,
  type Queuing,
} from './queue-page.js';

const LEASE_MS = 30_000;
/** Pages per pass: a stop is noticed between passes. */
const PAGES_PER_PASS = 20;

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

/**
 * The next campaign due to be queued, held by this node, its groups cut; or none due, one to
 * pass over (its workspace is gone), or one whose groups could not be cut (left to its lease).
 */
async function claimCampaign(hand: Hand, deps: CampaignQueueDeps): Promise<Queuing | 'none' | 'skip' | 'failed'> {
  const { db } = deps;
  const campaign = await claimQueuingCampaign(db, deps.dialect, hand.lease());
  if (!campaign) return 'none';
  hand.hold([campaign.id]);
  const workspace = await findWorkspace(db, campaign.workspace_id);
  if (!workspace) {
    hand.settle([campaign.id]);
    return 'skip';
  }
  const q: Queuing = {
    campaign,
    workspace,
    variants: new Map((await listCampaignVariants(db, campaign.id)).map((v) => [v.variant, v])),
  };
  try {
    await cutGroups(db, deps.dialect, hand.owner, q);
  } catch (err) {
    // Left to its lease, as a page that could not be queued.
    if (!(err instanceof NotOurs))
      hand.log.error({ err, campaignId: campaign.id }, 'could not cut the groups of a campaign');
    hand.settle([campaign.id]);
    return 'failed';
  }
  return q;
}

/**
 * The campaign queuer, a job on the worker kernel: claims a campaign being queued and writes
 * its recipients to the queue page by page, each page through the same door as every send
 * (services/send/enqueue.ts: the workspace's marketing rate, rows, metrics), with the cursor
 * moved in the page's transaction, so that after a crash queuing resumes exactly after the last
 * committed page. Messages are composed when first delivered (messages/campaign-message.ts).
 */
export function campaignQueueJob(hand: Hand, deps: CampaignQueueDeps): WorkerJob {
  let current: Queuing | null = null;

  const drop = (q: Queuing) => {
    hand.settle([q.campaign.id]);
    current = null;
  };

  const done = async (q: Queuing) => {
    const now = deps.clock.now();
    // The test's variants are out: the winner is due after the test's time, as a row (choose-winners.ts).
    const winnerDueAt = phaseOf(q.campaign) === 'test' ? now + q.campaign.test_duration_ms! : null;
    await finishQueuingCampaign(deps.db, q.campaign.id, hand.owner, now, winnerDueAt);
    hand.log.info({ campaignId: q.campaign.id, workspaceId: q.workspace.id }, 'campaign queued');
    drop(q);
  };

  return {
    table: 'campaigns',
    wakeOn: ['campaigns'],
    leaseMs: LEASE_MS,
    graceMs: 10_000,
    async pass(): Promise<Next> {
      if (!current) {
        const claimed = await claimCampaign(hand, deps);
        if (claimed === 'none') return { sleep: deps.pollMs, onWork: 'now' };
        if (claimed === 'skip') return 'again';
        if (claimed === 'failed') return { sleep: deps.pollMs, onWork: 'ignore' };
        current = claimed;
      }
      const q = current;
      for (let i = 0; i < PAGES_PER_PASS && !hand.stopping; i++) {
        let r: PageOutcome;
        try {
          r = await queuePage(hand, deps, q);
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
