import type { Config } from '../../config/schema.js';
import { classifyResponse } from '../../delivery/classify-response.js';
import { recipientEventData } from '../../delivery/event-data.js';
import { parseReturnPath } from '../../delivery/return-path.js';
import { recordEvent } from '../../events/record-event.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { parseMail } from '../../shared/parse-mail.js';
import type { Db } from '../../store/infra/db.js';
import {
  findEmailById,
  findEmailByMessageId,
  listQueueItemsOfEmail,
  refreshEmailStatus,
  type Email,
} from '../../store/emails.js';
import { listEmailEvents } from '../../store/events.js';
import { bounceQueueItem, findQueueItemOfRecipient } from '../../store/queue.js';
import { saveSuppressionIfAbsent } from '../../store/suppressions.js';
import type { InboundKind } from '../inbound-kind.js';
import { addressOf, readReport, type Dsn, type FeedbackReport } from './parse-feedback.js';

/**
 * Asynchronous bounces (DSN, RFC 3464) and complaints (ARF, RFC 5965) received by the inbound
 * listener. A bounce comes back to the email's VERP return path, which names the email; a
 * complaint names it by that return path (Original-Mail-From) or by the original Message-ID.
 * Each updates the recipient's state, suppresses the address and records the event (and its
 * webhooks) in one transaction. A report seen twice changes nothing the second time.
 */

type ReportOutcome =
  | { kind: 'bounce'; emailId: string; recipients: string[] }
  | { kind: 'complaint'; emailId: string; recipient: string | null }
  /** A genuine report with nothing to change (unknown email, delay warning, seen already). */
  | { kind: 'ignored'; reason: string }
  /** Not a report at all: the listener refuses it. */
  | { kind: 'refused'; reason: string };

interface FeedbackDeps {
  db: Db;
  clock: Clock;
  config: Config;
  secretKey: Buffer;
  logger: Logger;
}

/** Feedback types that mean "the recipient did not want this" (not-spam does not). */
const COMPLAINTS = new Set(['abuse', 'fraud', 'virus', 'other']);
const MAX_TEXT = 1000;

/**
 * The first kind the inbound listener asks: a VERP return path of ours (a bounce, or a
 * complaint sent there) or one of `smtp.inbound.feedbackAddresses`.
 */
export function feedbackKind(deps: FeedbackDeps): InboundKind<true> {
  const { db, clock, config, secretKey, logger } = deps;
  const log = logger.child({ component: 'inbound' });
  const feedbackAddresses = new Set(config.smtp.inbound.feedbackAddresses.map((a) => a.toLowerCase()));
  const emailIdOf = (address: string | null | undefined): string | null =>
    address ? parseReturnPath(address, secretKey) : null;

  async function bounce(report: Dsn, emailId: string | null): Promise<ReportOutcome> {
    if (!emailId)
      return { kind: 'refused', reason: 'a bounce must be sent to the return path of the message it is about' };
    const email = await findEmailById(db, emailId);
    if (!email) return { kind: 'ignored', reason: 'the message is not known (any more)' };
    const failed = report.recipients.filter((r) => r.action === 'failed');
    if (failed.length === 0)
      return { kind: 'ignored', reason: `nothing failed (${report.recipients.map((r) => r.action).join(', ')})` };
    const now = clock.now();
    const bounced: string[] = [];
    await db.transaction().execute(async (trx) => {
      for (const r of failed) {
        const item = await findQueueItemOfRecipient(trx, email.id, r.recipient);
        if (!item) continue;
        const reply = r.diagnostic ?? `${r.status?.startsWith('4') ? 450 : 550} ${r.status ?? '5.0.0'} ${r.action}`;
        const code = /^([245]\d\d)\b/.exec(reply)?.[1];
        const classified = classifyResponse(
          /^[45]\d\d\b/.test(reply) ? reply : `${r.status?.startsWith('4') ? 450 : 550} ${reply}`,
        );
        // The report is final ("failed"): a reply the rules would retry counts as a soft bounce.
        const type = classified.bounceType ?? 'soft';
        const response = reply.slice(0, MAX_TEXT);
        if (!(await bounceQueueItem(trx, item.id, { code: code ? Number(code) : null, response }, now))) continue;
        bounced.push(item.recipient);
        if (type === 'hard' && !email.test) {
          await saveSuppressionIfAbsent(trx, {
            workspace_id: email.workspace_id,
            address: item.recipient.toLowerCase(),
            scope: 'all',
            reason: 'hard_bounce',
            detail: response,
            email_id: email.id,
            created_at: now,
          });
        }
        await recordEvent(trx, {
          workspaceId: email.workspace_id,
          type: 'email.bounced',
          emailId: email.id,
          at: now,
          data: recipientEventData(email, item.recipient, now, {
            bounce: { type, category: classified.category, message: response },
            smtp: { code: code ? Number(code) : null, response },
            mx_host: r.remoteMta ?? report.reportingMta,
          }),
        });
      }
      if (bounced.length > 0) await refreshEmailStatus(trx, email.id, now);
    });
    if (bounced.length === 0)
      return { kind: 'ignored', reason: 'the recipients had bounced already, or are not recipients of the message' };
    log.info(
      { emailId: email.id, workspaceId: email.workspace_id, recipients: bounced.length },
      'asynchronous bounce recorded',
    );
    return { kind: 'bounce', emailId: email.id, recipients: bounced };
  }

  /** Who complained: the report says, else the original's To if it was a recipient, else the only recipient. */
  async function complainant(report: FeedbackReport, email: Email): Promise<string | null> {
    const recipients = (await listQueueItemsOfEmail(db, email.id)).map((i) => i.recipient);
    const known = (address: string | null) =>
      address ? (recipients.find((r) => r.toLowerCase() === address.toLowerCase()) ?? null) : null;
    return (
      known(report.originalRcptTo) ??
      known(addressOf(report.original.get('to'))) ??
      (recipients.length === 1 ? recipients[0]! : null)
    );
  }

  async function complaint(report: FeedbackReport, toEmailId: string | null): Promise<ReportOutcome> {
    if (!COMPLAINTS.has(report.feedbackType))
      return { kind: 'ignored', reason: `feedback type ${report.feedbackType} is not a complaint` };
    const messageId = report.original.get('message-id');
    const email =
      (await findEmailById(
        db,
        emailIdOf(report.originalMailFrom) ?? emailIdOf(report.original.get('return-path')) ?? toEmailId ?? '',
      )) ?? (messageId ? await findEmailByMessageId(db, messageId.trim()) : undefined);
    if (!email) return { kind: 'ignored', reason: 'the message is not known' };
    const recipient = await complainant(report, email);
    const seen = (await listEmailEvents(db, email.workspace_id, email.id)).some(
      (e) => e.type === 'email.complained' && e.data.recipient === (recipient ?? ''),
    );
    if (seen) return { kind: 'ignored', reason: 'this complaint was recorded already' };
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      if (recipient && !email.test) {
        await saveSuppressionIfAbsent(trx, {
          workspace_id: email.workspace_id,
          address: recipient.toLowerCase(),
          scope: 'all',
          reason: 'complaint',
          detail: `${report.feedbackType} report${report.userAgent ? ` from ${report.userAgent}` : ''}`.slice(
            0,
            MAX_TEXT,
          ),
          email_id: email.id,
          created_at: now,
        });
      }
      await recordEvent(trx, {
        workspaceId: email.workspace_id,
        type: 'email.complained',
        emailId: email.id,
        at: now,
        data: recipientEventData(email, recipient ?? '', now, {
          feedback_type: report.feedbackType,
          user_agent: report.userAgent,
        }),
      });
    });
    log.info(
      { emailId: email.id, workspaceId: email.workspace_id, feedbackType: report.feedbackType },
      'complaint recorded',
    );
    return { kind: 'complaint', emailId: email.id, recipient };
  }

  const accepts = (address: string) => emailIdOf(address) !== null || feedbackAddresses.has(address.toLowerCase());

  async function receive(recipients: string[], raw: Buffer): Promise<ReportOutcome> {
    const parsed = await parseMail(raw, {
      keepDeliveryStatus: true,
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipImageLinks: true,
      skipTextLinks: true,
    });
    const contentType = parsed.headers.get('content-type') as
      { value?: string; params?: Record<string, string> } | undefined;
    const report =
      contentType?.value?.toLowerCase() === 'multipart/report'
        ? readReport(
            contentType.params?.['report-type'],
            parsed.attachments.map((a) => ({ contentType: a.contentType.toLowerCase(), content: a.content })),
          )
        : null;
    if (!report)
      return {
        kind: 'refused',
        reason: 'only delivery status notifications (RFC 3464) and feedback reports (RFC 5965) are accepted here',
      };
    const toEmailId = recipients.map(emailIdOf).find((id) => id !== null) ?? null;
    return report.kind === 'dsn' ? bounce(report, toEmailId) : complaint(report, toEmailId);
  }

  return {
    name: 'feedback',
    claim: async (address) => (accepts(address) ? true : null),
    async receive(message) {
      const outcome = await receive(message.recipients, message.raw);
      switch (outcome.kind) {
        case 'refused':
          return { kind: 'refused', code: 550, reason: `5.6.0 ${outcome.reason}` };
        case 'ignored':
          return {
            kind: 'accepted',
            reply: `2.0.0 Ok: nothing to do (${outcome.reason})`,
            log: { outcome: 'ignored' },
          };
        case 'bounce':
          return {
            kind: 'accepted',
            reply: `2.0.0 Ok: bounce recorded for ${outcome.recipients.length} recipient(s)`,
            log: { outcome: 'bounce', emailId: outcome.emailId },
          };
        case 'complaint':
          return {
            kind: 'accepted',
            reply: '2.0.0 Ok: complaint recorded',
            log: { outcome: 'complaint', emailId: outcome.emailId },
          };
      }
    },
  };
}
