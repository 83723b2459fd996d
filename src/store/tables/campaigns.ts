import type { Generated } from 'kysely';

/** Campaigns (Resend's broadcasts), their A/B variants and holdouts. */

/**
 * draft: not sent yet (a broadcast being written); queuing: recipients are being written to
 * the queue (from scheduled_at, when set); testing: an A/B test's variants are queued and it
 * waits for its winner (until winner_due_at), then is queued again for the rest; sending: all
 * queued; sent: all finished; cancelled: stopped, what was still queued is cancelled.
 */
export const CAMPAIGN_STATUSES = ['draft', 'queuing', 'testing', 'sending', 'sent', 'cancelled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export interface CampaignsTable {
  id: string;
  workspace_id: string;
  name: string;
  status: CampaignStatus;
  subject: string;
  from_name: string;
  from_email: string;
  html: string | null;
  text: string | null;
  /** JSON array of addresses. */
  reply_to: string | null;
  /** The preheader: shown beside the subject in inboxes, hidden in the message. */
  preview_text: string | null;
  template_id: string | null;
  /** Only subscribers not opted out of this topic. */
  topic_id: string | null;
  /** Queuing starts at this time; null: as soon as it is sent. */
  scheduled_at: number | null;
  /** JSON array: subscribers having any of these tags; null for all. */
  tags: string | null;
  audience_id: string | null;
  variables: string | null;
  external_id: string | null;
  metadata: string | null;
  /** The IP pool its messages leave through; null: their domain's or workspace's. */
  ip_pool_id: Generated<string | null>;
  test: number;
  /** Subscribers selected when the campaign was accepted. */
  recipients: number;
  /** Messages queued so far. */
  queued: number;
  /** The last subscriber id queued: queuing resumes after it after a restart. */
  cursor: string | null;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: number;
  updated_at: number | null;
  queued_at: number | null;
  sent_at: number | null;
  cancelled_at: number | null;
  /** Percent of the recipients who get nothing (to measure the campaign's lift); 0: none. */
  holdout_percentage: number;
  /** Percent of the recipients the variants go to, split evenly; null: no A/B test. */
  test_percentage: number | null;
  winner_metric: WinnerMetric | null;
  test_duration_ms: number | null;
  /** When the winner is chosen by the metric; set once the variants are queued. */
  winner_due_at: number | null;
  winner_variant: string | null;
  winner_chosen_at: number | null;
  winner_chosen_by: WinnerChoice | null;
  /** JSON GroupCuts: where the recipients were cut into groups when queuing began; null: by percentages. */
  group_cuts: Generated<string | null>;
}

/**
 * Where a campaign's recipients are cut (campaigns/ab-group.ts), as values of their 48-bit
 * hashes: below `holdout` held out; then below `variants[i]` the i-th variant; the rest above.
 */
export interface GroupCuts {
  holdout: number;
  variants: number[];
}

/** What an A/B test is decided on: people's opens or clicks, per message delivered. */
export const WINNER_METRICS = ['human_open_rate', 'human_click_rate'] as const;
export type WinnerMetric = (typeof WINNER_METRICS)[number];
/** metric: the better rate; tie: no variant was ahead, the first was taken; manual: chosen by hand. */
export type WinnerChoice = 'metric' | 'tie' | 'manual';

/** One variant of an A/B test: what it changes of the campaign's content (null: the campaign's own). */
export interface CampaignVariantsTable {
  campaign_id: string;
  /** `A` to `E`, in the order given. */
  variant: string;
  position: number;
  name: string | null;
  subject: string | null;
  preview_text: string | null;
  from_name: string | null;
  /** A template's content is copied here when the variant is saved, as a campaign's is. */
  html: string | null;
  text: string | null;
  template_id: string | null;
}

/** A contact held out of a campaign: sent nothing, kept to compare with those who were. */
export interface CampaignHoldoutsTable {
  campaign_id: string;
  subscriber_id: string;
  created_at: number;
}
