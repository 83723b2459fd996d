import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import type { Db, Dialect } from '../store/infra/db.js';
import { listEmailContents, listEmailsByIds, type Email, type QueueItem } from '../store/emails.js';
import { releaseLeases } from '../store/lease.js';
import { claimDueQueueItems } from '../store/queue.js';
import { listSuppressionsCovering } from '../store/suppressions.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';
import { cachedResolver } from './cached-resolver.js';
import { destinationChooser } from './choose-destination.js';
import { DestinationBook } from './destination-book.js';
import type { DkimSigner } from './dkim-signer.js';
import { DomainLimiter } from './domain-limiter.js';
import { destinationLimitOf, groupOfKey } from './destination-key.js';
import { DeliveryGate, type DestinationState } from './gate.js';
import { groupIntoJobs } from './group-into-jobs.js';
import { runJobSteps, type JobStepsContext } from './job-steps.js';
import type { MtaStsPolicies } from './mta-sts.js';
import { messagePreparer } from './prepare-message.js';
import { rulesWith } from './response-rules.js';
import { resultRecorder } from './result-recorder.js';
import type { SmtpClient } from './smtp-client.js';
import { throttleLog, type ThrottleLog } from './throttle-log.js';
import type { JobContext, Prepared } from './transmit-job.js';

export interface DeliveryDeps {
  db: Db;
  dialect: Dialect;
  config: Config['delivery'];
  clock: Clock;
  resolver: DnsResolver;
  secretKey: Buffer;
  smtp: SmtpClient;
  signer: DkimSigner;
  mtaSts: MtaStsPolicies | null;
  batcher: CommitBatcher;
  /** The message of an email stored without one: a campaign's, composed when first delivered. */
  compose(email: Email): Promise<Buffer | undefined>;
  /** Of the rows just claimed, holds what must wait (the reputation guard's paused domains); returns the rows to deliver. */
  hold?: ((owner: string, items: QueueItem[], emails: Map<string, Email>) => Promise<QueueItem[]>) | undefined;
  metrics?: Metrics | undefined;
}

export interface DeliveryJob extends WorkerJob {
  /** Every destination with state, for /metrics and `queue list`. */
  destinations(): DestinationState[];
  /** Pauses other nodes reported (destination key, until when): this node holds those destinations too. */
  adoptPauses(pauses: ReadonlyArray<{ key: string; until: number }>): void;
}

const MAX_CLAIM = 500;

/**
 * Destinations the claim leaves in the queue: paused ones, and those with a full refill (as
 * many jobs as they may run at once) already waiting in hand; the recipient domains all of
 * whose destinations are such.
 */
function domainsToLeaveOut(
  limiter: DomainLimiter,
  gate: DeliveryGate,
  book: DestinationBook,
  throttles: ThrottleLog,
): string[] {
  limiter.prune();
  throttles.forgetEnded();
  const known = new Set(limiter.domains());
  const full = new Set([...known].filter((k) => limiter.pausedUntil(k) > 0 || gate.waiting(k) >= limiter.allowed(k)));
  return book.domainsAllFull(known, (key) => gate.waiting(key), full);
}

/** How long a claim that left destinations out may wait: until the first pause ends, at most a poll interval. */
function untilHeldBackFree(
  heldBack: ReadonlySet<string>,
  book: DestinationBook,
  limiter: DomainLimiter,
  pollInterval: number,
  now: number,
): number {
  let ms = pollInterval;
  for (const d of heldBack) {
    for (const key of book.keysOf(d)) {
      const until = limiter.pausedUntil(key);
      if (until > 0) ms = Math.min(ms, Math.max(5, until - now));
    }
  }
  return ms;
}

/** What the jobs of one claim share: the settings and seams, and each message prepared (signed) once for all its jobs. */
function contextOfClaim(
  base: Omit<JobContext, 'prepare'>,
  prepare: ReturnType<typeof messagePreparer>,
  contents: Map<string, Buffer>,
): JobContext {
  const prepared = new Map<string, Promise<Prepared>>();
  return {
    ...base,
    // Jobs of one message to several domains sign it once.
    prepare: (email) => {
      let p = prepared.get(email.id);
      if (!p) {
        p = prepare(email, contents.get(email.id));
        contents.delete(email.id);
        prepared.set(email.id, p);
      }
      return p;
    },
  };
}

/** Gives rows back without a result, due at `dueAt` (with a note of why they wait); they leave the hand whatever happens. */
function releaser(hand: Hand, deps: DeliveryDeps, forget: (items: readonly QueueItem[]) => void) {
  return async (items: QueueItem[], dueAt: number, note?: string): Promise<void> => {
    if (items.length === 0) return;
    try {
      await deps.batcher.run(
        (trx) =>
          releaseLeases(
            trx,
            'queue_items',
            hand.owner,
            items.map((i) => i.id),
            { dueAt, now: deps.clock.now(), note },
          ),
        'background',
      );
    } catch (err) {
      hand.log.error({ err }, 'could not release queue items (their leases run out)');
    } finally {
      forget(items);
    }
  };
}

/**
 * Claimed rows as running jobs: their emails, suppressions and stored messages read once for
 * the batch (not once per message); what the reputation guard holds set aside; rows whose
 * email is gone given back; each job started on its steps (job-steps.ts).
 */
async function startClaimed(
  hand: Hand,
  deps: DeliveryDeps,
  items: QueueItem[],
  on: {
    forget(items: readonly QueueItem[]): void;
    release(items: QueueItem[], dueAt: number): Promise<void>;
    /** What the claim's jobs share: the suppressions covering them, their stored messages (each message prepared once). */
    steps(suppressions: JobStepsContext['suppressions'], contents: Map<string, Buffer>): JobStepsContext;
  },
): Promise<void> {
  const now = deps.clock.now();
  try {
    const emailIds = [...new Set(items.map((i) => i.email_id))];
    const [emails, suppressions, contents] = await Promise.all([
      listEmailsByIds(deps.db, emailIds),
      listSuppressionsCovering(
        deps.db,
        [...new Set(items.map((i) => i.workspace_id))],
        items.map((i) => i.recipient),
      ),
      listEmailContents(deps.db, emailIds),
    ]);
    const byId = new Map(emails.map((e) => [e.id, e]));
    const deliverable = deps.hold ? await deps.hold(hand.owner, items, byId) : items;
    if (deliverable.length < items.length) on.forget(items.filter((i) => !deliverable.includes(i)));
    const { jobs, orphans } = groupIntoJobs(deliverable, byId);
    if (orphans.length > 0) hand.run(() => on.release(orphans, now));
    const steps = on.steps(suppressions, contents);
    for (const job of jobs) hand.run(() => runJobSteps(job, steps));
  } catch (err) {
    hand.log.error({ err }, 'could not start claimed jobs; releasing them');
    hand.run(() => on.release(items, now));
  }
}

/** Pauses other nodes reported: held here too; a changed pause wakes the gate's waiting jobs. */
function adoptPauses(
  pauses: ReadonlyArray<{ key: string; until: number }>,
  on: { limiter: DomainLimiter; gate: DeliveryGate; book: DestinationBook; log: Hand['log'] },
): void {
  let changed = false;
  for (const p of pauses) {
    if (on.limiter.pauseUntil(p.key, p.until)) {
      changed = true;
      on.log.info(
        {
          destination: groupOfKey(p.key),
          source: on.book.get(p.key)?.source ?? null,
          pausedUntil: new Date(p.until).toISOString(),
        },
        'another node was asked to slow down: pausing here too',
      );
    }
  }
  if (changed) on.gate.paused();
}

/**
 * Delivery, a job on the worker kernel. A pass claims due queue rows, holds what the
 * reputation guard paused, groups the rest into jobs (one message, the recipients it has at
 * one domain) and starts each (job-steps.ts: hold if suppressed, simulate if a test, wait for
 * a slot, route, sign, transmit). Results commit together (group commit: result-recorder.ts).
 *
 * What is its own: the slots (gate.ts: the node's concurrency and each destination's limits)
 * and the back-pressure between them and the claim: at most `maxInMemory` rows in hand; a
 * destination with a full refill already waiting is left out of the next claim, so one busy
 * destination cannot fill the memory and hold up the others.
 */
export function deliveryJob(hand: Hand, deps: DeliveryDeps): DeliveryJob {
  const { db, dialect, config, clock } = deps;
  /** Claimed rows kept in hand at most: enough to keep every slot busy while the next claim runs. */
  const maxInMemory = Math.max(config.concurrency * 4, 50);
  /** Claims happen when at least this much room is free: a claim is a write, so rows come in batches. */
  const refillBatch = Math.max(1, Math.floor(maxInMemory / 4));
  const limitOf = destinationLimitOf(config);
  const limiter = new DomainLimiter(limitOf, () => clock.now(), {
    pauseMs: config.backoff.pauseSeconds * 1000,
    maxPauseMs: config.backoff.maxPauseSeconds * 1000,
  });
  const resolver = cachedResolver(deps.resolver, () => clock.now());
  const book = new DestinationBook(() => clock.now());
  const throttles = throttleLog({ config, clock, limiter, book, limitOf, log: hand.log, metrics: deps.metrics });
  const prepare = messagePreparer({
    db,
    clock,
    secretKey: deps.secretKey,
    signer: deps.signer,
    returnPathSubdomain: config.returnPathSubdomain,
    compose: deps.compose,
  });
  const base = {
    config,
    rules: rulesWith(config.slowDownReplies),
    resolver,
    smtp: deps.smtp,
    mtaSts: deps.mtaSts,
    logger: hand.log,
  };
  /** Destinations the last claim left out (paused, or with enough of their rows waiting). */
  let heldBack = new Set<string>();
  /** The loop sleeps until room is free. */
  let waitingForRoom = false;
  /** Cut off by the stop: outcomes of aborted transactions are not recorded. */
  let abandoning = false;

  const gate = new DeliveryGate(limiter, config.concurrency, {
    throttled: (key) => throttles.throttled(key),
    // A slot was given: a destination the claim left out whose waiting jobs run low gets a claim.
    started: (key) => {
      const d = book.get(key);
      if (d && [...d.domains].some((domain) => heldBack.has(domain)) && gate.waiting(key) <= limiter.allowed(key) / 2)
        hand.wake();
    },
  });

  /** Rows no longer in hand: their room goes back to the claim. */
  const forget = (items: readonly QueueItem[]) => {
    hand.settle(items.map((i) => i.id));
    if (waitingForRoom && maxInMemory - hand.held >= refillBatch) {
      waitingForRoom = false;
      hand.wake();
    }
  };
  const release = releaser(hand, deps, forget);
  const steps: Omit<JobStepsContext, 'suppressions' | 'context'> = {
    clock,
    gate,
    limiter,
    log: hand.log,
    abandoning: () => abandoning,
    record: resultRecorder(hand, { batcher: deps.batcher, clock, config, metrics: deps.metrics, forget }),
    release,
    destinationOf: destinationChooser({ db, clock, config, resolver, batcher: deps.batcher, book, limitOf }),
  };

  /** Claims up to `limit` due rows (not of the `excluded` domains) and starts their jobs; returns how many it claimed. */
  const claimAndStart = async (limit: number, excluded: string[]): Promise<number> => {
    const items = await deps.batcher.run(
      (trx) => claimDueQueueItems(trx, dialect, hand.lease(), limit, excluded),
      'background',
    );
    if (items.length === 0) return 0;
    hand.hold(items.map((i) => i.id));
    await startClaimed(hand, deps, items, {
      forget,
      release,
      steps: (suppressions, contents) => ({ ...steps, suppressions, context: contextOfClaim(base, prepare, contents) }),
    });
    return items.length;
  };

  return {
    table: 'queue_items',
    wakeOn: ['queue_items'],
    leaseMs: config.leaseSeconds * 1000,
    graceMs: config.shutdownTimeout * 1000,

    /**
     * Never sleeps the poll interval while due rows can be started: after a full claim it
     * claims again at once; with little room it waits for jobs to finish; when the claim left
     * destinations out, for their waiting jobs to run low. The poll interval only bounds how
     * late rows that become due (retries, scheduled mail) are noticed when idle.
     */
    async pass(): Promise<Next> {
      const room = maxInMemory - hand.held;
      if (room < refillBatch) {
        waitingForRoom = true;
        return { sleep: config.pollInterval, onWork: 'ignore' };
      }
      const asked = Math.min(room, MAX_CLAIM);
      const excluded = domainsToLeaveOut(limiter, gate, book, throttles);
      const claimed = await claimAndStart(asked, excluded);
      heldBack = new Set(excluded);
      if (claimed >= asked) return 'again';
      // The rows left may all be for destinations left out: claim again when they need more.
      if (excluded.length > 0)
        return { sleep: untilHeldBackFree(heldBack, book, limiter, config.pollInterval, clock.now()), onWork: 'soon' };
      // Drained for now: let more arrive, so a steady stream is claimed in batches.
      if (claimed > 0) return { sleep: Math.min(config.pollInterval, 50), onWork: 'ignore' };
      return { sleep: config.pollInterval, onWork: 'now' };
    },

    halt: () => gate.halt(),

    async abort() {
      abandoning = true;
      await deps.smtp.close(true);
    },

    async close() {
      await deps.smtp.close();
      await deps.signer.close();
    },

    adoptPauses: (pauses) => adoptPauses(pauses, { limiter, gate, book, log: hand.log }),

    destinations: () => book.view(gate.destinations(), limitOf),
  };
}
