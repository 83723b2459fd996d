import { campaignReport, type GroupStats } from '../services/marketing/campaign-report.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { listCampaignVariants, listDueTests, saveWinner } from '../store/ab-tests.js';
import type { Db, Dialect } from '../store/infra/db.js';
import type { WinnerChoice, WinnerMetric } from '../store/campaigns.js';

/** Tests decided per run; more wait for the next second. */
const BATCH = 20;

/**
 * The variant that did best on the test's metric: people's distinct opens or clicks per
 * message delivered (machines left out). When the best rate is shared, the first of those
 * variants is taken and the choice says it was a tie. Pure.
 */
export function pickWinner(
  keys: readonly string[],
  stats: ReadonlyMap<string, GroupStats>,
  metric: WinnerMetric,
): { variant: string; by: WinnerChoice } {
  const score = (key: string) => {
    const s = stats.get(key);
    return {
      hits: s ? (metric === 'human_open_rate' ? s.human_opened : s.human_clicked) : 0,
      delivered: s?.delivered ?? 0,
    };
  };
  // a/b against c/d without rounding: a·d against c·b (no message delivered scores 0).
  const compare = (x: { hits: number; delivered: number }, y: { hits: number; delivered: number }) =>
    (x.delivered === 0 ? 0 : x.hits) * (y.delivered || 1) - (y.delivered === 0 ? 0 : y.hits) * (x.delivered || 1);
  const best = keys.reduce((top, key) => (compare(score(key), score(top)) > 0 ? key : top), keys[0]!);
  const tied = keys.filter((k) => compare(score(k), score(best)) === 0);
  return { variant: best, by: tied.length > 1 ? 'tie' : 'metric' };
}

/**
 * A periodic task: A/B tests whose time is up get their winner, by the metric, and are queued
 * again for the rest of their recipients. The wait is the campaign's `winner_due_at`, a row,
 * so it survives restarts; the winner is saved by a compare-and-set, so a test is decided
 * once, by whichever node runs the task (or by hand first, POST /v1/broadcasts/{id}/winner).
 */
export async function chooseWinners(deps: { db: Db; dialect: Dialect; clock: Clock; logger: Logger }): Promise<number> {
  const { db, dialect, clock } = deps;
  let chosen = 0;
  for (const campaign of await listDueTests(db, clock.now(), BATCH)) {
    const [report, variants] = await Promise.all([
      campaignReport(db, dialect, campaign),
      listCampaignVariants(db, campaign.id),
    ]);
    const winner = pickWinner(
      variants.map((v) => v.variant),
      report.test,
      campaign.winner_metric ?? 'human_click_rate',
    );
    if (!(await saveWinner(db, campaign.id, winner.variant, winner.by, clock.now()))) continue;
    chosen++;
    deps.logger.info(
      {
        component: 'ab-test',
        campaignId: campaign.id,
        workspaceId: campaign.workspace_id,
        variant: winner.variant,
        chosenBy: winner.by,
      },
      'A/B test winner chosen',
    );
  }
  return chosen;
}
