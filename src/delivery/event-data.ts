import { toIso } from '../shared/clock.js';
import type { Email } from '../store/emails.js';

/**
 * The data of a delivery event about one recipient: every field either surface renders
 * (legacy: email_id, message_id, recipient, campaign_id, timestamp, metadata{subscriber_id,
 * tags}; versioned: email_id, to, subject, …). The webhook dispatcher picks its surface's.
 */
export function recipientEventData(
  email: Email,
  recipient: string,
  at: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    email_id: email.id,
    message_id: email.message_id,
    from: email.from_header,
    to: [recipient],
    recipient,
    subject: email.subject,
    campaign_id: email.campaign_id,
    subscriber_id: email.subscriber_id,
    variant: email.variant,
    tags: email.tags,
    metadata: email.metadata,
    external_id: email.external_id,
    test: email.test,
    timestamp: toIso(at),
    ...extra,
  };
}
