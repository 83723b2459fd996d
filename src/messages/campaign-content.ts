import type { CampaignVariant } from '../store/ab-tests.js';
import type { Campaign } from '../store/campaigns.js';

/** The content a message of the campaign carries: the variant's where it changed it, else the campaign's. */
export interface Content {
  subject: string;
  fromName: string;
  previewText: string | null;
  html: string | null;
  text: string | null;
}

export const contentOf = (
  c: Pick<Campaign, 'subject' | 'from_name' | 'preview_text' | 'html' | 'text'>,
  v: Omit<CampaignVariant, 'campaign_id'> | undefined,
): Content => ({
  subject: v?.subject ?? c.subject,
  fromName: v?.from_name ?? c.from_name,
  previewText: v?.preview_text ?? c.preview_text,
  html: v?.html ?? c.html,
  text: v?.text ?? c.text,
});
