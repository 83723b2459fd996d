import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../shared/clock.js';
import { Collector, type CommitBatcher } from '../store/infra/commit-batcher.js';
import type { QueueItem } from '../store/emails.js';
import type { Hand } from '../workers/kernel.js';
import { rideOut } from '../workers/ride-out.js';
import { countOutcomes } from './count-outcomes.js';
import type { Outcome, RecipientResult } from './outcome.js';
import { recordOutcomes } from './record-outcomes.js';

/** How long finished results wait to share a commit, and how many jobs' results at most. */
const RECORD_WINDOW_MS = 20;
const RECORD_BATCH = 200;

interface Recorded {
  results: RecipientResult[];
  /** What the commit wrote (rows still ours), set by the write that committed. */
  written: Array<{ result: RecipientResult; outcome: Outcome }>;
}

const logResults = (hand: Hand, results: RecipientResult[]) => {
  for (const r of results) {
    const o = r.outcome;
    const fields = {
      emailId: r.email.id,
      workspaceId: r.email.workspace_id,
      queueItemId: r.item.id,
      outcome: o.kind,
      code: 'code' in o ? o.code : null,
      mxHost: 'mxHost' in o ? o.mxHost : null,
    };
    if (o.kind === 'delivered') hand.log.debug(fields, 'delivered');
    else
      hand.log.info(
        {
          ...fields,
          category: 'category' in o ? o.category : undefined,
          response: 'response' in o ? o.response : undefined,
        },
        o.kind,
      );
  }
};

/**
 * Records the results of delivery jobs: group commit (the results of the jobs finishing within
 * a few milliseconds share one transaction), then the log lines and the counters, then the
 * rows leave the hand (`forget`).
 */
export function resultRecorder(
  hand: Hand,
  deps: {
    batcher: CommitBatcher;
    clock: Clock;
    config: Config['delivery'];
    metrics?: Metrics | undefined;
    forget(items: readonly QueueItem[]): void;
  },
) {
  const { clock, config } = deps;
  const recorder = new Collector<Recorded>(
    deps.batcher,
    async (trx, batch) => {
      const written = await recordOutcomes(
        trx,
        batch.flatMap((b) => b.results),
        {
          owner: hand.owner,
          now: clock.now(),
          retrySchedule: config.retrySchedule,
          maxQueueLifetime: config.maxQueueLifetime,
        },
      );
      const byItem = new Map(written.map((w) => [w.result.item.id, w]));
      for (const b of batch) b.written = b.results.flatMap((r) => byItem.get(r.item.id) ?? []);
    },
    { windowMs: RECORD_WINDOW_MS, max: RECORD_BATCH },
  );

  return async (results: RecipientResult[]): Promise<void> => {
    if (results.length === 0) return;
    const entry: Recorded = { results, written: [] };
    try {
      // A delivered message whose result is lost is sent again: through a fault of the
      // database, the result is written again (backing off) for as long as the lease may
      // still be ours; after that the rows go to whoever claims them (at least once).
      await rideOut(() => recorder.add(entry), {
        forMs: config.leaseSeconds * 1000,
        stopping: () => hand.stopping,
        onFault: (err, attempt, retryInMs) =>
          hand.log.warn(
            { cause: (err as Error).message, attempt, retryInMs, results: results.length },
            'could not record delivery results yet: storage fault',
          ),
      });
      logResults(hand, results);
      // Counted once committed: a rolled-back batch is written again, one job at a time.
      if (deps.metrics) countOutcomes(deps.metrics, entry.written, clock.now());
    } catch (err) {
      // No longer renewed: the lease runs out and any worker retries the rows (at least once).
      hand.log.error(
        { err, emailIds: [...new Set(results.map((r) => r.email.id))] },
        'could not record delivery results',
      );
    } finally {
      deps.forget(results.map((r) => r.item));
    }
  };
}
