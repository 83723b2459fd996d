import { countCampaignGroups, countHoldouts, type GroupCounts } from '../../store/ab-tests.js';
import type { Db, Dialect } from '../../store/infra/db.js';
import type { Campaign } from '../../store/campaigns.js';

/**
 * What became of a campaign's messages: by status, with engagement (by anyone and by people),
 * the contacts held out, and for an A/B test each variant's share of the test and the winner's
 * sending to the rest. Machines (Apple's prefetch, scanners) are counted apart: `opened` =
 * `human_opened` + `machine_opened`, where a message counts as a person's once anyone but a
 * machine opened it.
 */

export interface GroupStats {
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  human_opened: number;
  human_clicked: number;
  /** People's distinct opens (clicks) per message delivered, 0 to 1. */
  human_open_rate: number;
  human_click_rate: number;
}

interface CampaignReport {
  counts: Record<string, number>;
  /** Each variant's messages sent in the test. */
  test: Map<string, GroupStats>;
  /** The winner's messages to the rest of the recipients. */
  winner: GroupStats | null;
}

const ratio = (part: number, whole: number): number => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000);

const sum = (groups: readonly GroupCounts[], pick: (g: GroupCounts) => number) =>
  groups.reduce((n, g) => n + pick(g), 0);

function statsOf(groups: readonly GroupCounts[]): GroupStats {
  const sent = sum(groups, (g) => Object.values(g.byStatus).reduce((a, b) => a + b, 0));
  const delivered = sum(groups, (g) => g.byStatus.delivered ?? 0);
  const humanOpened = sum(groups, (g) => g.humanOpened);
  const humanClicked = sum(groups, (g) => g.humanClicked);
  return {
    sent,
    delivered,
    opened: sum(groups, (g) => g.opened),
    clicked: sum(groups, (g) => g.clicked),
    human_opened: humanOpened,
    human_clicked: humanClicked,
    human_open_rate: ratio(humanOpened, delivered),
    human_click_rate: ratio(humanClicked, delivered),
  };
}

/** `from` is the transaction when called inside one: SQLite has one connection, and a query on `db` from inside a transaction would wait for it forever. */
export async function campaignReport(from: Db, dialect: Dialect, c: Campaign): Promise<CampaignReport> {
  const [groups, heldOut] = await Promise.all([countCampaignGroups(from, dialect, c.id), countHoldouts(from, c.id)]);
  const status = (k: string) => sum(groups, (g) => g.byStatus[k] ?? 0);
  const all = statsOf(groups);
  const test = new Map<string, GroupStats>();
  for (const variant of new Set(groups.filter((g) => g.phase === 'test').map((g) => g.variant!))) {
    test.set(variant, statsOf(groups.filter((g) => g.phase === 'test' && g.variant === variant)));
  }
  const winnerGroups = groups.filter((g) => g.phase === 'winner');
  return {
    counts: {
      queued: c.queued,
      pending: status('queued') + status('scheduled') + status('sending') + status('deferred') + status('held'),
      delivered: status('delivered'),
      bounced: status('bounced'),
      failed: status('failed'),
      suppressed: status('suppressed'),
      cancelled: status('cancelled'),
      opened: all.opened,
      clicked: all.clicked,
      human_opened: all.human_opened,
      human_clicked: all.human_clicked,
      machine_opened: all.opened - all.human_opened,
      machine_clicked: all.clicked - all.human_clicked,
      unsubscribed: sum(groups, (g) => g.unsubscribed),
      held_out: heldOut,
    },
    test,
    winner: winnerGroups.length > 0 ? statsOf(winnerGroups) : null,
  };
}
