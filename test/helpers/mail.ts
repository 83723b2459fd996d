import MailComposer from 'nodemailer/lib/mail-composer';
import { newId } from '../../src/shared/ids.js';
import type { Db } from '../../src/store/infra/db.js';
import { findDomainByName } from '../../src/store/domains.js';
import {
  PRIORITY,
  saveEmail,
  type Email,
  type EmailType,
  type NewEmail,
  type QueueItem,
} from '../../src/store/emails.js';

export interface QueueOptions {
  workspaceId: string;
  /** The sending domain (added to the workspace); the From address is on it. */
  domain: string;
  to: string[];
  subject?: string;
  text?: string;
  html?: string;
  type?: EmailType;
  test?: boolean;
  now?: number;
  /** The IP pool it leaves through (its id). */
  ipPoolId?: string | null;
}

/**
 * Queues an email the way the send service does (nodemailer MailComposer, Message-ID on the
 * sending domain, one queue row per recipient, one transaction), for delivery tests that do
 * not go through the HTTP API.
 */
export async function queueEmail(db: Db, options: QueueOptions): Promise<Email> {
  const queued = await composeQueuedEmail(db, options);
  await db.transaction().execute((trx) => saveEmail(trx, queued));
  return queued.email;
}

/** What queueEmail writes, not written yet (for tests that queue through the send path's own door). */
export async function composeQueuedEmail(db: Db, options: QueueOptions): Promise<NewEmail & { type: EmailType }> {
  const now = options.now ?? Date.now();
  const domain = await findDomainByName(db, options.workspaceId, options.domain);
  const id = newId();
  const from = `sender@${options.domain}`;
  const messageId = `<${id}@${options.domain}>`;
  const subject = options.subject ?? 'Hello from mailsvc';
  const raw = await new MailComposer({
    from: { name: 'Sender', address: from },
    to: options.to,
    subject,
    text: options.text ?? 'Hello,\n\nthis is a delivery test.\n',
    html: options.html,
    messageId,
    date: new Date(now),
    xMailer: false,
  })
    .compile()
    .build();
  const type = options.type ?? 'transactional';
  const email: Email = {
    id,
    workspace_id: options.workspaceId,
    test: options.test === true,
    type,
    priority: PRIORITY[type],
    status: 'queued',
    intake: 'v1',
    domain_id: domain?.id ?? null,
    from_address: from,
    from_header: `Sender <${from}>`,
    to_addresses: options.to,
    cc_addresses: null,
    bcc_addresses: null,
    reply_to: null,
    subject,
    message_id: messageId,
    template_id: null,
    campaign_id: null,
    subscriber_id: null,
    variant: null,
    ab_phase: null,
    tags: null,
    metadata: { case: 'test' },
    external_id: null,
    track_opens: false,
    track_clicks: false,
    size: raw.length,
    scheduled_at: null,
    created_at: now,
    updated_at: now,
    ip_pool_id: options.ipPoolId ?? null,
  };
  const recipients: QueueItem[] = options.to.map((address) => ({
    id: newId(),
    email_id: id,
    workspace_id: options.workspaceId,
    recipient: address,
    recipient_domain: address.slice(address.lastIndexOf('@') + 1).toLowerCase(),
    status: 'queued',
    priority: PRIORITY[type],
    test: options.test === true,
    attempts: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_until: null,
    last_code: null,
    last_response: null,
    created_at: now,
    updated_at: now,
    finished_at: null,
  }));
  return { email, raw, recipients, type };
}
