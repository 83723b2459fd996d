import { newId } from '../shared/ids.js';
import {
  type NewEmail,
  PRIORITY,
  type AbPhase,
  type Email,
  type EmailType,
  type Intake,
  type QueueItem,
} from '../store/emails.js';
import { domainOf } from '../shared/domain-name.js';
import type { Domain } from '../store/domains.js';
import type { Address } from './addresses.js';
import type { TrackingFlags } from './links.js';

export interface Prepared extends NewEmail {
  type: EmailType;
}

const formatMailbox = (a: Address): string => (a.name ? `${JSON.stringify(a.name)} <${a.address}>` : a.address);

/** What the email row records of the request that made it (a SendInput is one). */
interface EmailOrigin {
  intake: Intake;
  test: boolean;
  type: EmailType;
  metadata?: Record<string, unknown> | undefined;
  externalId?: string | undefined;
  campaignId?: string | undefined;
  subscriberId?: string | undefined;
  /** A campaign's A/B test: the variant the message carries, sent in the test or with the winner. */
  variant?: { key: string; phase: AbPhase } | undefined;
}

interface RecordInput {
  id: string;
  now: number;
  /** Where the message comes from and what it is. */
  input: EmailOrigin;
  domain: Domain;
  from: Address;
  to: Address[];
  cc: Address[];
  bcc: Address[];
  replyTo: Address[];
  recipients: string[];
  subject: string;
  messageId: string;
  templateId: string | null;
  tags: string[];
  scheduledAt: number | null;
  /** The composed message; absent when it is composed at delivery (campaign messages). */
  raw?: Buffer;
  /** What the HTML carries: opens and clicks tracked or not. */
  track: TrackingFlags;
  /** The IP pool the request named (its id), if any. */
  ipPoolId?: string | null | undefined;
  /** The workspace's IP pool, the last choice before the default. */
  workspacePoolId?: string | null | undefined;
}

/** The email row, its content (when composed now) and one queue item per recipient. */
export function emailRecords(workspaceId: string, m: RecordInput): Prepared {
  const { input, now } = m;
  const priority = PRIORITY[input.type];
  const email: Email = {
    id: m.id,
    workspace_id: workspaceId,
    test: input.test,
    type: input.type,
    priority,
    status: m.scheduledAt ? 'scheduled' : 'queued',
    intake: input.intake,
    domain_id: m.domain.id,
    from_address: m.from.address,
    from_header: formatMailbox(m.from),
    to_addresses: m.to.map(formatMailbox),
    cc_addresses: m.cc.length ? m.cc.map(formatMailbox) : null,
    bcc_addresses: m.bcc.length ? m.bcc.map(formatMailbox) : null,
    reply_to: m.replyTo.length ? m.replyTo.map(formatMailbox) : null,
    subject: m.subject,
    message_id: m.messageId,
    template_id: m.templateId,
    campaign_id: input.campaignId ?? null,
    subscriber_id: input.subscriberId ?? null,
    variant: input.variant?.key ?? null,
    ab_phase: input.variant?.phase ?? null,
    tags: m.tags.length ? m.tags : null,
    metadata: input.metadata ?? null,
    external_id: input.externalId ?? null,
    track_opens: m.track.opens,
    track_clicks: m.track.clicks,
    size: m.raw?.length ?? 0,
    scheduled_at: m.scheduledAt,
    created_at: now,
    updated_at: now,
    // The message's pool, else its sending domain's, else its workspace's; null is the default.
    ip_pool_id: m.ipPoolId ?? m.domain.ip_pool_id ?? m.workspacePoolId ?? null,
  };
  const queueItems: QueueItem[] = m.recipients.map((address) => ({
    id: newId(),
    email_id: m.id,
    workspace_id: workspaceId,
    recipient: address,
    recipient_domain: domainOf(address),
    status: 'queued',
    priority,
    test: email.test,
    attempts: 0,
    next_attempt_at: m.scheduledAt ?? now,
    lease_owner: null,
    lease_until: null,
    last_code: null,
    last_response: null,
    created_at: now,
    updated_at: now,
    finished_at: null,
  }));
  return { email, raw: m.raw, recipients: queueItems, type: input.type };
}
