import type { Metrics } from '../../observability/metrics.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import type { CommitBatcher, Merged } from '../../store/infra/commit-batcher.js';
import type { Db } from '../../store/infra/db.js';
import { saveEmails, PRIORITY } from '../../store/emails.js';
import type { Workspace } from '../../store/workspaces.js';
import { limitFor } from '../rate-limits.js';
import { retryAfterSeconds, type Decision, type RateLimiter } from '../../shared/fixed-window.js';
import type { Prepared } from '../../messages/email-records.js';
import type { SendResult } from './send-input.js';
import type { FreeSpace } from '../../store/infra/free-space.js';

interface EnqueueOptions {
  /** Runs in the transaction that queues the mail (idempotency records its response, a campaign moves its cursor); throwing rolls it back. */
  inTransaction?: (trx: Db, results: SendResult[]) => Promise<void>;
}

/** Applies the workspace's limits and writes messages to the queue; returns what each became and the limit's state. */
export type Enqueue = (
  workspace: Workspace,
  prepared: Prepared[],
  options?: EnqueueOptions,
) => Promise<{ results: SendResult[]; limit: Decision }>;

/**
 * The one door into the queue (zone-mta's mail-drop): every message, whichever intake made it
 * (API, SMTP, a workflow, a campaign's page), passes the workspace's sending limits and is
 * written, email, content and one row per recipient, in one transaction shared with concurrent
 * callers (group commit) and in the same three inserts as theirs, then counted. The delivery workers are woken by the commit itself.
 *
 * Below the disk's reserve (`storage.minFreeBytes`) it refuses with `storage_full`.
 *
 * Limits (SPEC Limits): marketing beyond its hard limit is refused (429, nothing queued);
 * transactional beyond its soft limit is demoted to marketing priority (rule 1).
 */
export function createEnqueue(deps: {
  clock: Clock;
  rateLimiter: RateLimiter;
  batcher: CommitBatcher;
  space: FreeSpace;
  metrics?: Metrics | undefined;
}): Enqueue {
  const { clock, rateLimiter } = deps;
  /**
   * The messages of every request in a commit, written together: three multi-row inserts
   * (emails, contents, queue rows) per transaction, not three per request. Each request's own
   * step (`inTransaction`) runs first, in the same transaction as its messages.
   */
  const queueing: Merged<{
    prepared: Prepared[];
    results: SendResult[];
    inTransaction: EnqueueOptions['inTransaction'];
  }> = {
    async write(trx, items) {
      for (const item of items) await item.inTransaction?.(trx, item.results);
      await saveEmails(
        trx,
        items.flatMap((item) => item.prepared),
      );
    },
  };

  async function applyLimits(
    workspace: Workspace,
    prepared: Prepared[],
  ): Promise<{ decision: Decision; demoted: boolean }> {
    const now = clock.now();
    const key = `ws:${workspace.id}`;
    const marketing = prepared.filter((p) => p.type === 'marketing').length;
    const transactional = prepared.length - marketing;
    let decision: Decision | undefined;
    if (marketing > 0) {
      const limit = limitFor('send.marketing', workspace);
      decision = await rateLimiter.hit(`${key}:send.marketing`, limit, now, marketing);
      if (!decision.allowed) {
        const retryAfter = retryAfterSeconds(decision, now);
        deps.metrics?.rateLimited(prepared[0]!.email.intake === 'smtp' ? 'smtp' : 'http', 'send.marketing');
        throw new AppError(
          'rate_limited',
          `Marketing send rate of ${limit.limit} per second exceeded; retry after ${retryAfter} s`,
          { retryAfter, rateLimit: decision },
        );
      }
    }
    let demoted = false;
    if (transactional > 0) {
      decision = await rateLimiter.hit(
        `${key}:send.transactional`,
        limitFor('send.transactional', workspace),
        now,
        transactional,
      );
      demoted = !decision.allowed;
    }
    return { decision: decision!, demoted };
  }

  return async (workspace, prepared, options = {}) => {
    // Below the disk's reserve nothing new is queued, whichever intake: a workflow or a
    // campaign page waits and tries again, a client is told to retry.
    deps.space.ensure();
    const { decision, demoted } = await applyLimits(workspace, prepared);
    const results: SendResult[] = prepared.map((p) => {
      const demote = demoted && p.type === 'transactional';
      if (demote) {
        p.email.priority = PRIORITY.marketing;
        for (const r of p.recipients) r.priority = PRIORITY.marketing;
      }
      return {
        id: p.email.id,
        status: p.email.status === 'scheduled' ? 'scheduled' : 'queued',
        type: p.type,
        demoted: demote,
      };
    });
    await deps.batcher.merge(queueing, { prepared, results, inTransaction: options.inTransaction });
    const intake = prepared[0]?.email.intake;
    const label = intake === 'v1' || intake === 'legacy' || intake === 'dashboard' ? 'http' : intake;
    if (label)
      for (const type of ['transactional', 'marketing'] as const) {
        const n = prepared.filter((p) => p.type === type).length;
        if (n > 0) deps.metrics?.emailsAccepted(label, type, n);
      }
    return { results, limit: decision };
  };
}
