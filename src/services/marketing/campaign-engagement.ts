import { isUuid } from '../../shared/ids.js';
import { notFound, validationError } from '../../shared/errors.js';
import {
  listCampaignClickedLinks,
  listCampaignRecipients,
  listClicksOfEmails,
} from '../../store/campaign-engagement.js';
import { findCampaign } from '../../store/campaigns.js';
import { parsePage, DEFAULT_LIMIT, MAX_LIMIT } from '../../store/infra/list-page.js';
import type { ServiceDeps } from '../deps.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * A broadcast's recipients by what happened to their message, and the links they clicked
 * (Resend's `broadcasts.recipients` and `broadcasts.clickedLinks`), read from the events of the
 * campaign's emails.
 */

const RECIPIENT_EVENT_TYPES = [
  'sent',
  'delivered',
  'opened',
  'clicked',
  'bounced',
  'complained',
  'unsubscribed',
  'suppressed',
] as const;
type RecipientEventType = (typeof RECIPIENT_EVENT_TYPES)[number];
const BOUNCE_TYPES = ['permanent', 'transient', 'undetermined'] as const;
type BounceType = (typeof BOUNCE_TYPES)[number];

const EVENT_OF: Record<RecipientEventType, string> = {
  sent: 'email.sent',
  delivered: 'email.delivered',
  opened: 'email.opened',
  clicked: 'email.clicked',
  bounced: 'email.bounced',
  complained: 'email.complained',
  unsubscribed: 'subscriber.unsubscribed',
  suppressed: 'email.suppressed',
};

interface BroadcastRecipientView {
  /** The email's id: the cursor of the list. */
  id: string;
  contact_id: string | null;
  email: string;
  count?: number;
  clicked_links?: Array<{ url: string; clicks: number }>;
  bounce_type?: BounceType;
}

interface ClickedLinkView {
  /** An opaque cursor (the URL, base64url). */
  id: string;
  url: string;
  clicks: number;
  unique_clicks: number;
}

export interface CampaignEngagementService {
  recipients(
    workspaceId: string,
    campaignId: string,
    query: Record<string, unknown>,
  ): Promise<{ object: 'list'; has_more: boolean; data: BroadcastRecipientView[] }>;
  clickedLinks(
    workspaceId: string,
    campaignId: string,
    query: Record<string, unknown>,
  ): Promise<{ object: 'list'; has_more: boolean; data: ClickedLinkView[] }>;
}

const bounceTypeOf = (data: Record<string, unknown>): BounceType => {
  const type = (data as { bounce?: { type?: string } }).bounce?.type;
  return type === 'hard' ? 'permanent' : type === 'soft' ? 'transient' : 'undetermined';
};

const addressOf = (toAddresses: string[]): string => {
  const first = toAddresses[0] ?? '';
  return /<([^>]+)>\s*$/.exec(first)?.[1] ?? first;
};

const urlCursor = (field: string, value: unknown): string | undefined => {
  if (value === undefined || value === '') return undefined;
  const decoded =
    typeof value === 'string' && /^[A-Za-z0-9_-]{1,4096}$/.test(value)
      ? Buffer.from(value, 'base64url').toString('utf8')
      : '';
  if (!decoded)
    throw validationError(field, 'must be the id of an item of the list (the last one of the previous page)');
  return decoded;
};

export function createCampaignEngagementService(deps: ServiceDeps): CampaignEngagementService {
  const { db, dialect } = deps;

  const find = async (workspaceId: string, id: string) => {
    const found = isUuid(id) ? await findCampaign(db, workspaceId, id.toLowerCase()) : undefined;
    if (!found) throw notFound(`Broadcast ${id}`);
    return found;
  };

  return {
    async recipients(workspaceId, campaignId, query) {
      const campaign = await find(workspaceId, campaignId);
      const type = query.type;
      if (typeof type !== 'string' || !isOneOf(RECIPIENT_EVENT_TYPES, type)) {
        throw validationError('type', `is required: one of ${RECIPIENT_EVENT_TYPES.join(', ')}`);
      }
      const bounceType = query.bounce_type;
      if (
        bounceType !== undefined &&
        (type !== 'bounced' || typeof bounceType !== 'string' || !isOneOf(BOUNCE_TYPES, bounceType))
      ) {
        throw validationError('bounce_type', `only with type bounced: one of ${BOUNCE_TYPES.join(', ')}`);
      }
      const email =
        typeof query.email === 'string' && query.email !== '' ? query.email.trim().toLowerCase() : undefined;
      const page = parsePage(query, 'keyset');
      const { rows, more } = await listCampaignRecipients(
        db,
        { workspaceId, campaignId: campaign.id, eventType: EVENT_OF[type], emailKey: email },
        page,
      );
      const clicks =
        type === 'clicked'
          ? await listClicksOfEmails(
              db,
              dialect,
              rows.map((r) => r.email_id),
            )
          : [];
      const data = rows
        .map((r): BroadcastRecipientView => ({
          id: r.email_id,
          contact_id: r.subscriber_id,
          email: r.subscriber_email ?? addressOf(r.to_addresses),
          ...(type === 'opened' || type === 'clicked' ? { count: r.count } : {}),
          ...(type === 'clicked'
            ? {
                clicked_links: clicks
                  .filter((c) => c.email_id === r.email_id)
                  .map(({ url, clicks: n }) => ({ url, clicks: n })),
              }
            : {}),
          ...(type === 'bounced' ? { bounce_type: bounceTypeOf(r.last_data) } : {}),
        }))
        // A page may come out shorter than asked: the bounce type is read from the event's data.
        .filter((r) => bounceType === undefined || r.bounce_type === bounceType);
      return { object: 'list', has_more: more, data };
    },

    async clickedLinks(workspaceId, campaignId, query) {
      const campaign = await find(workspaceId, campaignId);
      const after = urlCursor('after', query.after);
      const before = urlCursor('before', query.before);
      if (after !== undefined && before !== undefined) throw validationError('before', 'cannot be combined with after');
      const limitText = typeof query.limit === 'string' ? query.limit : undefined;
      const asked = limitText !== undefined && /^\d+$/.test(limitText) ? Number(limitText) : 0;
      // As the other cursor lists: over 100 is clamped, under 1 is the default.
      const limit = asked > MAX_LIMIT ? MAX_LIMIT : asked >= 1 ? asked : DEFAULT_LIMIT;
      const { rows, more } = await listCampaignClickedLinks(
        db,
        dialect,
        { workspaceId, campaignId: campaign.id },
        { limit, after, before },
      );
      return {
        object: 'list',
        has_more: more,
        data: rows.map((r) => ({ id: Buffer.from(r.url).toString('base64url'), ...r })),
      };
    },
  };
}
