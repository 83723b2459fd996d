import { listContactPropertyFallbacks } from '../store/contact-properties.js';
import type { Clock } from '../shared/clock.js';
import type { Db } from '../store/infra/db.js';
import { findCampaignById, type Campaign } from '../store/campaigns.js';
import { findEmailContent, saveEmailContent, type Email } from '../store/emails.js';
import { findSubscriber, type Subscriber } from '../store/subscribers.js';
import { listCampaignVariants, type CampaignVariant } from '../store/ab-tests.js';
import { contentOf } from './campaign-content.js';
import { parseMailbox, parseMailboxes } from './addresses.js';
import { buildMessage } from './build-message.js';
import type { Composer } from './compose.js';
import type { MessageLinks } from './links.js';
import { renderSubject, renderTemplate, type Variables } from './render-template.js';

/** A campaign being sent and its A/B test's variants, read once a minute. */
interface Sending {
  campaign: Campaign;
  variants: Map<string, CampaignVariant>;
}

type Recipient = Pick<Subscriber, 'email' | 'first_name' | 'last_name' | 'external_id' | 'metadata'>;

/**
 * A subscriber's own fields, over the campaign's variables (SPEC: variables merged with the
 * subscriber), over its metadata. Resend's names too: `FIRST_NAME`, `LAST_NAME`, `EMAIL`,
 * `RESEND_UNSUBSCRIBE_URL` and `contact.*` (with the contact's properties).
 */
export function subscriberVariables(
  campaignVariables: Variables | null,
  s: Recipient,
  unsubscribeUrl: string,
  fallbacks: Variables = {},
): Variables {
  const metadata: Variables = s.metadata ?? {};
  // A declared property's fallback stands in where the contact has no value (contactProperties).
  const properties = {
    ...fallbacks,
    ...Object.fromEntries(Object.entries(metadata).filter(([, v]) => v !== null && v !== undefined)),
  };
  const own = { email: s.email, first_name: s.first_name ?? '', last_name: s.last_name ?? '' };
  return {
    ...properties,
    ...campaignVariables,
    ...own,
    external_id: s.external_id ?? '',
    metadata,
    unsubscribe_url: unsubscribeUrl,
    FIRST_NAME: own.first_name,
    LAST_NAME: own.last_name,
    EMAIL: own.email,
    RESEND_UNSUBSCRIBE_URL: unsubscribeUrl,
    contact: { ...properties, ...own },
  };
}

/** The subject a campaign has for one recipient. */
export const campaignSubject = (
  campaign: Campaign,
  recipient: Recipient,
  unsubscribeUrl: string,
  fallbacks: Variables = {},
): string =>
  renderSubject(campaign.subject, subscriberVariables(campaign.variables, recipient, unsubscribeUrl, fallbacks));

interface CampaignMessageDeps {
  db: Db;
  clock: Clock;
  compose: Composer;
  links: MessageLinks;
}

/**
 * The message of a queued email: the stored one, or, for a campaign's (queued without one, so
 * a page of a large list costs rows, not messages), the campaign personalised for its
 * recipient and built by the one composer (build-message.ts) when first delivered or shown,
 * then stored (the first writer wins). Undefined when there is none to make.
 */
export function campaignMessages(deps: CampaignMessageDeps): (email: Email) => Promise<Buffer | undefined> {
  const { db, clock, links } = deps;
  // A sending campaign's content does not change, and reading it once per message was one
  // statement per recipient. Kept a minute, for the few campaigns sending at once.
  const campaigns = new Map<string, { until: number; campaign: Promise<Sending | undefined> }>();
  const read = async (id: string): Promise<Sending | undefined> => {
    const campaign = await findCampaignById(db, id);
    return campaign && { campaign, variants: new Map((await listCampaignVariants(db, id)).map((v) => [v.variant, v])) };
  };
  const campaignOf = (id: string) => {
    const now = clock.now();
    const hit = campaigns.get(id);
    if (hit && hit.until > now) return hit.campaign;
    if (campaigns.size >= 100) campaigns.delete(campaigns.keys().next().value!);
    const campaign = read(id);
    campaigns.set(id, { until: now + 60_000, campaign });
    void campaign.catch(() => campaigns.delete(id));
    return campaign;
  };

  // The workspace's property fallbacks, read once a minute as the campaign is.
  const fallbacks = new Map<string, { until: number; values: Promise<Variables> }>();
  const fallbacksOf = (workspaceId: string): Promise<Variables> => {
    const now = clock.now();
    const hit = fallbacks.get(workspaceId);
    if (hit && hit.until > now) return hit.values;
    if (fallbacks.size >= 100) fallbacks.delete(fallbacks.keys().next().value!);
    const values = listContactPropertyFallbacks(db, workspaceId) as Promise<Variables>;
    fallbacks.set(workspaceId, { until: now + 60_000, values });
    void values.catch(() => fallbacks.delete(workspaceId));
    return values;
  };

  return async (email) => {
    const stored = await findEmailContent(db, email.id);
    if (stored || !email.campaign_id) return stored;
    const sending = await campaignOf(email.campaign_id);
    if (!sending) return undefined;
    const { campaign } = sending;
    // An A/B test's message carries its variant's content (the winner's, for the rest).
    const content = contentOf(campaign, email.variant === null ? undefined : sending.variants.get(email.variant));
    const to = parseMailbox('to', email.to_addresses[0]!);
    const recipient = (email.subscriber_id
      ? await findSubscriber(db, email.workspace_id, email.subscriber_id)
      : undefined) ?? {
      email: to.address,
      first_name: null,
      last_name: null,
      external_id: null,
      metadata: null,
    };
    const unsubscribeUrl = links.unsubscribe(email.workspace_id, to.address, email.id);
    const variables = subscriberVariables(
      campaign.variables,
      recipient,
      unsubscribeUrl,
      await fallbacksOf(email.workspace_id),
    );
    const raw = await buildMessage(
      {
        emailId: email.id,
        from: { name: content.fromName, address: campaign.from_email },
        to: [to],
        cc: [],
        replyTo: parseMailboxes('reply_to', campaign.reply_to ?? undefined),
        subject: email.subject,
        html: content.html === null ? undefined : renderTemplate(content.html, variables, 'html'),
        text: content.text === null ? undefined : renderTemplate(content.text, variables, 'text'),
        headers: {},
        attachments: [],
        messageId: email.message_id,
        date: new Date(email.created_at),
        track: { opens: email.track_opens, clicks: email.track_clicks },
        unsubscribeUrl,
        previewText: content.previewText,
      },
      deps,
    );
    return saveEmailContent(db, email.id, raw);
  };
}
