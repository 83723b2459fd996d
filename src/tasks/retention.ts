import { deleteAuditEntriesBefore } from '../store/audit-log.js';
import { deleteExpiredOAuthModels } from '../store/oauth.js';
import { pruneWarmupCounts } from '../store/warmups.js';
import { deleteExpiredWindows } from '../store/rate-limits.js';
import { deleteReportsBefore } from '../store/deliverability-reports.js';
import { deleteOrphanImportFiles } from '../store/contact-imports.js';
import { deleteStatsBefore } from '../store/stats.js';
import {
  deleteApiLogsBefore,
  deleteAttemptsBefore,
  deleteEventsBefore,
  deleteIdempotencyKeysBefore,
  deleteReceivedEmailsBefore,
  deleteWorkflowRunsBefore,
} from '../store/retention.js';
import type { Clock } from '../shared/clock.js';
import type { Config } from '../config/schema.js';
import type { Db } from '../store/infra/db.js';
import { IDEMPOTENCY_TTL_MS } from '../services/idempotency.js';

const DAY = 24 * 3600 * 1000;

/** Warm-up counts of days that began longer ago than this are deleted. */
const WARMUP_COUNTS_KEPT_MS = 7 * 24 * 3600 * 1000;

interface RetentionReport {
  idempotencyKeys: number;
  deliveryAttempts: number;
  events: number;
  receivedEmails: number;
  rateLimitWindows: number;
  workflowRuns: number;
  apiLogs: number;
  deliverabilityReports: number;
  hourlyStats: number;
  warmupCounts: number;
  importFiles: number;
  auditEntries: number;
  /** Expired codes, refresh tokens, sessions and interactions of the authorization server. */
  oauthModels: number;
}

/**
 * Deletes what is past its keep-by date: idempotency keys after 24 h (the SPEC's replay
 * window), delivery attempts and events (with their webhook deliveries) after
 * `retention.days`, received messages, finished workflow runs and API request logs after `retention.days` too,
 * finished rate-limit windows, and DMARC and TLS reports and hourly statistics after 400 days
 * (or `retention.days` if longer), the audit log after `retention.auditDays`, what the OAuth
 * authorization server keeps once it has expired. Emails and their status stay.
 */
export async function runRetention(deps: { db: Db; clock: Clock; config: Config }): Promise<RetentionReport> {
  const now = deps.clock.now();
  const cutoff = now - deps.config.retention.days * DAY;
  return {
    idempotencyKeys: await deleteIdempotencyKeysBefore(deps.db, now - IDEMPOTENCY_TTL_MS, now),
    deliveryAttempts: await deleteAttemptsBefore(deps.db, cutoff),
    events: await deleteEventsBefore(deps.db, cutoff),
    receivedEmails: await deleteReceivedEmailsBefore(deps.db, cutoff),
    rateLimitWindows: await deleteExpiredWindows(deps.db, now),
    workflowRuns: await deleteWorkflowRunsBefore(deps.db, cutoff),
    apiLogs: await deleteApiLogsBefore(deps.db, cutoff),
    // DMARC and TLS reports are summaries, not mail: kept a year at least, for trends.
    deliverabilityReports: await deleteReportsBefore(deps.db, now - Math.max(deps.config.retention.days, 400) * DAY),
    hourlyStats: await deleteStatsBefore(deps.db, now - Math.max(deps.config.retention.days, 400) * DAY),
    // Only the current warm-up day's counts are read; a day's are kept a while to be looked at.
    warmupCounts: await pruneWarmupCounts(
      deps.db,
      now - Math.max(WARMUP_COUNTS_KEPT_MS, 2 * deps.config.delivery.warmup.daySeconds * 1000),
    ),
    // Uploads stored but never registered (the node stopped between the file and the import's row).
    importFiles: await deleteOrphanImportFiles(deps.db, now - DAY),
    // The audit log is kept on its own clock (a year by default): who did what matters longer than mail.
    auditEntries: await deleteAuditEntriesBefore(deps.db, now - deps.config.retention.auditDays * DAY),
    oauthModels: await deleteExpiredOAuthModels(deps.db, now),
  };
}
