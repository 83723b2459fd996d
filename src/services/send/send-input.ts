import type { EmailType, Intake } from '../../store/emails.js';
import type { Address } from '../../messages/addresses.js';
import type { Variables } from '../../messages/render-template.js';
import type { Db } from '../../store/infra/db.js';
import type { Decision } from '../../shared/fixed-window.js';
import type { AttachmentInput } from '../../messages/attachments.js';

/**
 * The send service's inputs and results, apart from the service itself: the records it writes
 * (email-records.ts) and every intake use them.
 */

/** What every intake hands to the send service, already in canonical shape. */
export interface SendInput {
  intake: Intake;
  /** Sent with a test key: goes through everything but delivery. */
  test: boolean;
  /** null: the workspace's default sender. */
  from: Address | null;
  /** The request field the sender came from, for error messages (`from` by default). */
  fromField?: string;
  to: Address[];
  cc?: Address[];
  bcc?: Address[];
  replyTo?: Address[];
  subject?: string | undefined;
  html?: string | undefined;
  text?: string | undefined;
  templateId?: string | undefined;
  variables?: Variables | undefined;
  headers?: Record<string, string> | undefined;
  attachments?: AttachmentInput[] | undefined;
  tags?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
  externalId?: string | undefined;
  type: EmailType;
  /** Epoch ms; null or past means now. */
  scheduledAt?: number | null | undefined;
  trackOpens?: boolean | undefined;
  trackClicks?: boolean | undefined;
  campaignId?: string | undefined;
  subscriberId?: string | undefined;
  /** The caller's key may send from this domain only (a restricted sending key). */
  senderDomainId?: string | null | undefined;
  /** The IP pool it leaves through (name or id); else its sending domain's, its workspace's, the default. */
  ipPool?: string | undefined;
}

export interface SendResult {
  id: string;
  status: 'queued' | 'scheduled';
  type: EmailType;
  /** Transactional mail over the soft limit, queued at marketing priority. */
  demoted: boolean;
}

export interface SendOutcome {
  results: SendResult[];
  /** The rate-limit decision to show in X-RateLimit-* headers. */
  limit: Decision;
  /** With `permissive`: the messages refused, by position in the request (the others were queued). */
  errors?: Array<{ index: number; message: string }>;
}

export interface SendOptions {
  /**
   * A batch in which invalid messages are reported and the valid ones queued (Resend's
   * permissive batch validation); by default a batch is all or nothing.
   */
  permissive?: boolean;
  /** Runs in the transaction that queues the mail (idempotency records its response there). */
  inTransaction?: (trx: Db, results: SendResult[], errors?: SendOutcome['errors']) => Promise<void>;
}

/**
 * A whole message submitted as it is (SMTP): the envelope decides the recipients, the
 * message's own headers the rest. `X-Mailsvc-*` headers set what API callers set in JSON.
 */
export interface RawSendInput {
  intake: Intake;
  test: boolean;
  envelopeFrom: string;
  recipients: string[];
  raw: Buffer;
  senderDomainId?: string | null | undefined;
}
