import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { contentOf } from '../../messages/campaign-content.js';
import type { Db } from '../../store/infra/db.js';
import type { Dialect } from '../../store/infra/dialect.js';
import type { Campaign, WinnerChoice, WinnerMetric } from '../../store/campaigns.js';
import { listCampaignVariants, type CampaignVariant } from '../../store/ab-tests.js';
import { campaignReport, type GroupStats } from './campaign-report.js';

/** How a campaign is shown on every surface: its fields, and (one campaign) its counts and variants. */

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

interface VariantView {
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

interface WinnerView {
  variant: string;
  chosen_by: WinnerChoice;
  chosen_at: string;
  /** The winner's messages to the rest of the recipients (a single campaign). */
  stats?: GroupStats;
}

export const campaignView = (c: Campaign): CampaignView => ({
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
  winner: c.winner_variant
    ? { variant: c.winner_variant, chosen_by: c.winner_chosen_by!, chosen_at: toIso(c.winner_chosen_at!) }
    : null,
});

/** A campaign with its counts, and an A/B test's variants with what each met with. */
export const detailedCampaignView = async (db: Db, dialect: Dialect, c: Campaign): Promise<CampaignView> => {
  const [report, variants] = await Promise.all([campaignReport(db, dialect, c), listCampaignVariants(db, c.id)]);
  const base = campaignView(c);
  const none: GroupStats = {
    sent: 0,
    delivered: 0,
    opened: 0,
    clicked: 0,
    human_opened: 0,
    human_clicked: 0,
    human_open_rate: 0,
    human_click_rate: 0,
  };
  return {
    ...base,
    counts: report.counts,
    ...(variants.length > 0
      ? { variants: variants.map((v) => variantView(c, v, report.test.get(v.variant) ?? none)) }
      : {}),
    winner: base.winner ? { ...base.winner, stats: report.winner ?? none } : null,
  };
};

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
  for (const [unit, size] of [
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size} ${unit}${ms === size ? '' : 's'}`;
  }
  return `${Math.round(ms / 1000)} seconds`;
}
