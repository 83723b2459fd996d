import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config/schema.js';
import type { Clock } from '../shared/clock.js';
import { decryptSecret } from '../shared/crypto.js';
import type { DnsResolver } from '../shared/dns.js';
import type { Logger } from '../shared/logger.js';
import { CommitBatcher } from '../store/commit-batcher.js';
import type { Db, Dialect } from '../store/db.js';
import { findDomain, listDkimKeys } from '../store/domains.js';
import { findEmailContent, listEmailContents, listEmailsByIds, refreshEmailStatuses } from '../store/emails.js';
import { claimDueQueueItems, extendLeases, releaseQueueItems } from '../store/queue.js';
import { listSuppressionsCovering } from '../store/suppressions.js';
import type { Email, QueueItem, Suppression } from '../store/tables.js';
import { cachedResolver } from './cached-resolver.js';
import { deliverJob, type Job, type JobContext, type Prepared } from './deliver-job.js';
import type { DkimKey, DkimSigner } from './dkim-signer.js';
import { DomainLimiter, domainLimitOf } from './domain-limiter.js';
import type { MtaStsPolicies } from './mta-sts.js';
import type { Outcome, RecipientResult } from './outcome.js';
import { recordOutcomes } from './record-outcomes.js';
import { bounceDomainOf, returnPathFor } from './return-path.js';
import { countOutcomes } from './count-outcomes.js';
import type { Metrics } from '../observability/metrics.js';
import { isSimulated, simulate } from './simulator.js';
import type { SmtpClient } from './smtp-client.js';

/**
 * The delivery workers of one `mailsvc serve`: a loop that claims due queue rows with a lease,
 * groups them into jobs (one message, the recipients it has at one domain), and runs each job
 * through its steps: hold if suppressed, simulate if a test, wait for a slot (global and
 * per-domain limits), route, sign, transmit, record. Results and events are written with
 * group commit; leases are renewed while work runs; stopping gives back what did not start
 * and, after `shutdownTimeout`, what did not finish.
 */

export interface DeliveryDeps {
  db: Db;
  dialect: Dialect;
  config: Config['delivery'];
  clock: Clock;
  logger: Logger;
  resolver: DnsResolver;
  secretKey: Buffer;
  smtp: SmtpClient;
  signer: DkimSigner;
  mtaSts: MtaStsPolicies | null;
  /** Group commit shared with the intakes (fewer fsyncs); a private one by default. */
  batcher?: CommitBatcher;
  /** The message to send for an email; campaign messages are composed on first use. */
  loadContent?: (email: Email) => Promise<Buffer | undefined>;
  metrics?: Metrics;
  /**
   * The reputation guard's step: of the rows just claimed, holds (writes `held`) the marketing
   * mail of paused sending domains and returns the rows to deliver.
   */
  hold?: (owner: string, items: QueueItem[], emails: Map<string, Email>) => Promise<QueueItem[]>;
}

export interface DeliveryEngine {
  /** Identifies this process's leases (`lease_owner`). */
  readonly owner: string;
  start(): void;
  /** New mail was queued: claim now instead of at the next poll. */
  wake(): void;
  /** Stops claiming, lets transactions in flight finish (bounded), gives back the rest. */
  stop(): Promise<void>;
}

/** RFC 5321 §4.5.3.1.8: servers must take at least 100 recipients per transaction. */
const MAX_RECIPIENTS_PER_TRANSACTION = 100;
const MAX_CLAIM = 500;
const KEY_CACHE_MS = 60_000;
/** How long finished results wait to share a commit, and how many jobs' results at most. */
const RECORD_WINDOW_MS = 20;
const RECORD_BATCH = 200;
/** A destination that held mail back within this long is still in the same throttling episode (one log line). */
const THROTTLE_EPISODE_GAP_MS = 60_000;

type SlotResult = 'go' | 'paused' | 'stopping';

export function createDeliveryEngine(deps: DeliveryDeps): DeliveryEngine {
  const { db, dialect, config, clock, secretKey, smtp, signer } = deps;
  const logger = deps.logger.child({ component: 'delivery' });
  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const leaseMs = config.leaseSeconds * 1000;
  const concurrency = config.concurrency;
  /** Claimed rows kept in memory at most: enough to keep every slot busy while the next claim runs. */
  const maxInMemory = Math.max(concurrency * 4, 50);
  const batcher = deps.batcher ?? new CommitBatcher(db);
  const limitOf = domainLimitOf(config.domainLimits, config.defaultDomainLimit);
  const limiter = new DomainLimiter(limitOf, () => clock.now());
  /** Claims happen when at least this much room is free: a claim is a write, so rows come in batches. */
  const refillBatch = Math.max(1, Math.floor(maxInMemory / 4));

  const inMemory = new Map<string, QueueItem>();
  const running = new Set<Promise<void>>();
  const waiters = new Map<string, Array<(r: SlotResult) => void>>();
  let smtpActive = 0;
  let stopping = false;
  let abandoning = false;
  let loopDone: Promise<void> | null = null;
  let heartbeat: NodeJS.Timeout | null = null;
  let pumpTimer: NodeJS.Timeout | null = null;
  let wakeUp: (() => void) | null = null;
  /** What the claim loop sleeps for, so that only the matching event wakes it. */
  let sleepingFor: 'room' | 'domains' | 'work' | null = null;
  /** Domains the last claim left out (paused, or with enough of their rows waiting in memory). */
  let heldBack = new Set<string>();
  const throttledAt = new Map<string, number>();
  const keyCache = new Map<string, { until: number; key: DkimKey | null }>();
  const resolver = cachedResolver(deps.resolver, () => clock.now());

  // ---- slots: global concurrency and per-domain limits -------------------------------------

  const pump = () => {
    if (pumpTimer) clearTimeout(pumpTimer);
    pumpTimer = null;
    let nextWait = Infinity;
    for (const [domain, queue] of waiters) {
      if (limiter.pausedUntil(domain) > 0) {
        // The domain asked us to slow down: its waiting jobs go back to the queue.
        for (const resolve of queue.splice(0)) resolve('paused');
      }
      while (queue.length > 0 && smtpActive < concurrency && limiter.tryStart(domain)) {
        queue.shift()!('go');
        started(domain);
      }
      if (queue.length === 0) waiters.delete(domain);
      else nextWait = Math.min(nextWait, limiter.waitMs(domain));
    }
    if (nextWait !== Infinity && nextWait > 0) {
      pumpTimer = setTimeout(pump, Math.max(nextWait, 5));
      pumpTimer.unref();
    }
  };

  /**
   * A job that waits because of its destination's limit (not the node's own concurrency) is
   * a throttled wait: counted by destination class, and logged once per domain and episode
   * (an episode ends after THROTTLE_EPISODE_GAP_MS without such a wait).
   */
  const noteThrottled = (domain: string) => {
    const hold = limiter.holdOf(domain);
    if (hold === null) return;
    deps.metrics?.throttledWait(domain, hold);
    const now = clock.now();
    const last = throttledAt.get(domain);
    throttledAt.set(domain, now);
    if (last !== undefined && now - last < THROTTLE_EPISODE_GAP_MS) return;
    const limit = limitOf(domain);
    logger.info(
      {
        domain,
        hold,
        concurrency: limiter.allowed(domain),
        perMinute: limit.perMinute,
        setting: domain in config.domainLimits ? `delivery.domainLimits["${domain}"]` : 'delivery.defaultDomainLimit',
      },
      hold === 'paused' ? 'destination asked us to slow down: its mail waits' : 'destination limit reached: mail to it waits its turn',
    );
  };

  /** A slot was given to a job of `domain`: when the claim left the domain out and its waiting jobs run low, claim again. */
  const started = (domain: string) => {
    smtpActive++;
    if (sleepingFor === 'domains' && heldBack.has(domain) && (waiters.get(domain)?.length ?? 0) <= limiter.allowed(domain) / 2) wake();
  };

  const acquireSlot = (domain: string): Promise<SlotResult> => {
    if (stopping) return Promise.resolve('stopping');
    if (!waiters.has(domain) && smtpActive < concurrency && limiter.tryStart(domain)) {
      started(domain);
      return Promise.resolve('go');
    }
    noteThrottled(domain);
    return new Promise((resolve) => {
      const queue = waiters.get(domain) ?? [];
      queue.push(resolve);
      waiters.set(domain, queue);
      pump();
    });
  };

  const releaseSlot = (domain: string, outcomes: Outcome[]) => {
    smtpActive--;
    const throttled = outcomes.some((o) => o.kind === 'deferred' && o.slowDown);
    const ok = outcomes.some((o) => o.kind === 'delivered');
    limiter.finish(domain, throttled ? 'throttled' : ok ? 'ok' : 'neutral');
    if (throttled) logger.warn({ domain, pausedUntil: new Date(limiter.pausedUntil(domain)).toISOString() }, 'destination throttles us: slowing down');
    pump();
  };

  // ---- message preparation: content, DKIM key, signature, envelope sender -----------------

  const dkimKeyFor = async (email: Email): Promise<DkimKey | null> => {
    if (!email.domain_id) return null;
    const cached = keyCache.get(email.domain_id);
    if (cached && cached.until > clock.now()) return cached.key;
    const domain = await findDomain(db, email.workspace_id, email.domain_id);
    const active = domain ? (await listDkimKeys(db, [domain.id]))[0] : undefined;
    const key = domain && active ? { domain: domain.name, selector: active.selector, privateKey: decryptSecret(secretKey, active.private_key_sealed) } : null;
    keyCache.set(email.domain_id, { until: clock.now() + KEY_CACHE_MS, key });
    return key;
  };

  const prepare = async (email: Email, stored: Buffer | undefined): Promise<Prepared> => {
    const load = () => (deps.loadContent ? deps.loadContent(email) : findEmailContent(db, email.id));
    const [content, key] = await Promise.all([stored ?? load(), dkimKeyFor(email)]);
    if (!content) return { kind: 'failed', category: 'message', reason: 'the message content is missing' };
    if (!key) return { kind: 'failed', category: 'config', reason: 'the sending domain has no DKIM key (was it removed?)' };
    const message = await signer.sign(content, key, clock.now());
    return { kind: 'message', message, returnPath: returnPathFor(email.id, bounceDomainOf(key.domain, config.returnPathSubdomain), secretKey) };
  };

  const jobContext = (prepared: Map<string, Promise<Prepared>>, contents: Map<string, Buffer>): JobContext => ({
    config,
    resolver,
    smtp,
    mtaSts: deps.mtaSts,
    logger,
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
  });

  // ---- writing results ---------------------------------------------------------------------

  const forget = (items: QueueItem[]) => {
    for (const item of items) inMemory.delete(item.id);
    if (sleepingFor === 'room' && maxInMemory - inMemory.size >= refillBatch) wake();
  };

  const writeResults = async (results: RecipientResult[]) => {
    const now = clock.now();
    const written = await batcher.run((trx) => recordOutcomes(trx, results, { owner, now, retrySchedule: config.retrySchedule, maxQueueLifetime: config.maxQueueLifetime }), 'background');
    // Counted once committed: a rolled-back batch is written again, one job at a time.
    if (deps.metrics) countOutcomes(deps.metrics, written, now);
  };

  const logResults = (results: RecipientResult[]) => {
    for (const r of results) {
      const o = r.outcome;
      const fields = { emailId: r.email.id, workspaceId: r.email.workspace_id, queueItemId: r.item.id, outcome: o.kind, code: 'code' in o ? o.code : null, mxHost: 'mxHost' in o ? o.mxHost : null };
      if (o.kind === 'delivered') logger.debug(fields, 'delivered');
      else logger.info({ ...fields, category: 'category' in o ? o.category : undefined, response: 'response' in o ? o.response : undefined }, o.kind);
    }
  };

  /**
   * Results of jobs that finish within RECORD_WINDOW_MS are written in one transaction: SMTP
   * replies arrive one by one, and a commit (an fsync on SQLite, which blocks the event loop)
   * per message would cost more than the delivery itself.
   */
  let pendingWrites: Array<{ results: RecipientResult[]; done: () => void }> = [];
  let flushTimer: NodeJS.Timeout | null = null;

  const flushWrites = async () => {
    flushTimer = null;
    const groups = pendingWrites;
    pendingWrites = [];
    if (groups.length === 0) return;
    try {
      await writeResults(groups.flatMap((g) => g.results));
      for (const g of groups) logResults(g.results);
    } catch {
      // One bad job must not lose the others' results: write each on its own.
      for (const g of groups) {
        try {
          await writeResults(g.results);
          logResults(g.results);
        } catch (err) {
          // The rows keep our lease until it expires, then any worker retries them: at least once.
          logger.error({ err, emailIds: [...new Set(g.results.map((r) => r.email.id))] }, 'could not record delivery results');
        }
      }
    } finally {
      for (const g of groups) {
        forget(g.results.map((r) => r.item));
        g.done();
      }
    }
  };

  const record = (results: RecipientResult[]): Promise<void> => {
    if (results.length === 0) return Promise.resolve();
    return new Promise<void>((done) => {
      pendingWrites.push({ results, done });
      if (pendingWrites.length >= RECORD_BATCH) void flushWrites();
      else flushTimer ??= setTimeout(() => void flushWrites(), RECORD_WINDOW_MS);
    });
  };

  const release = async (items: QueueItem[], dueAt: number, note?: string) => {
    if (items.length === 0) return;
    try {
      await batcher.run(async (trx) => {
        const now = clock.now();
        await refreshEmailStatuses(trx, await releaseQueueItems(trx, owner, items.map((i) => i.id), dueAt, now, note), now);
      }, 'background');
    } catch (err) {
      logger.error({ err }, 'could not release queue items (their leases will expire)');
    } finally {
      forget(items);
    }
  };

  // ---- one job -----------------------------------------------------------------------------

  const suppressionOf = (item: QueueItem, email: Email, entries: Suppression[]): Suppression | undefined => {
    const address = item.recipient.toLowerCase();
    const domain = `@${address.slice(address.lastIndexOf('@') + 1)}`;
    return entries.find(
      (s) => s.workspace_id === item.workspace_id && (s.address === address || s.address === domain) && (s.scope === 'all' || email.type === 'marketing'),
    );
  };

  const runJob = async (job: Job, suppressions: Suppression[], prepared: Map<string, Promise<Prepared>>, contents: Map<string, Buffer>) => {
    const startedAt = clock.now();
    const results: RecipientResult[] = [];
    const result = (item: QueueItem, outcome: Outcome, start = startedAt) =>
      results.push({ email: job.email, item, outcome, startedAt: start, durationMs: clock.now() - start });

    // Hold: a suppressed address is never sent to.
    const toSend: QueueItem[] = [];
    for (const item of job.items) {
      const entry = suppressionOf(item, job.email, suppressions);
      if (entry) result(item, { kind: 'suppressed', entry });
      else toSend.push(item);
    }
    if (toSend.length === 0) return record(results);

    // Simulate: test keys and simulator addresses never open a connection.
    if (isSimulated(job.email.test, job.domain)) {
      for (const item of toSend) {
        const outcome = simulate(item.recipient, item.attempts, clock.now());
        result(item, outcome.kind === 'suppressed' ? { kind: 'suppressed', entry: { ...outcome.entry, workspace_id: item.workspace_id } } : outcome);
      }
      return record(results);
    }

    // Wait for a slot: global concurrency and the destination's limits.
    const slot = await acquireSlot(job.domain);
    if (slot !== 'go') {
      await record(results);
      if (slot !== 'paused') return release(toSend, clock.now());
      const until = limiter.pausedUntil(job.domain) || clock.now();
      return release(toSend, until, `${job.domain} asked us to slow down: its mail waits until ${new Date(until).toISOString()}`);
    }

    const sendStart = clock.now();
    let outcomes: Outcome[];
    try {
      outcomes = await deliverJob({ ...job, items: toSend }, jobContext(prepared, contents));
    } catch (err) {
      logger.error({ err, emailId: job.email.id }, 'delivery step failed');
      outcomes = toSend.map(() => ({ kind: 'deferred', code: null, response: `internal error: ${(err as Error).message}`, category: 'other', mxHost: null, tls: false }));
    }
    releaseSlot(job.domain, outcomes);

    const giveBack: QueueItem[] = [];
    toSend.forEach((item, i) => {
      const outcome = outcomes[i]!;
      // Cut off by shutdown: the outcome is unknown, so the row goes back without an attempt.
      if (abandoning && outcome.kind === 'deferred' && ['network', 'timeout', 'other'].includes(outcome.category)) giveBack.push(item);
      else result(item, outcome, sendStart);
    });
    await record(results);
    await release(giveBack, clock.now());
  };

  // ---- the claim loop ----------------------------------------------------------------------

  const track = (p: Promise<void>) => {
    running.add(p);
    void p.finally(() => running.delete(p));
  };

  const toJobs = (items: QueueItem[], emails: Map<string, Email>): { jobs: Job[]; orphans: QueueItem[] } => {
    const groups = new Map<string, Job>();
    const jobs: Job[] = [];
    const orphans: QueueItem[] = [];
    for (const item of items) {
      const email = emails.get(item.email_id);
      if (!email) {
        orphans.push(item);
        continue;
      }
      const key = `${item.email_id} ${item.recipient_domain}`;
      let job = groups.get(key);
      if (!job || job.items.length >= MAX_RECIPIENTS_PER_TRANSACTION) {
        job = { email, domain: item.recipient_domain, items: [] };
        groups.set(key, job);
        jobs.push(job);
      }
      job.items.push(item);
    }
    return { jobs, orphans };
  };

  /**
   * Domains the claim leaves in the queue: paused ones, and those with a full refill (as many
   * jobs as they may run at once) already waiting in memory, so that one busy destination
   * cannot fill the memory and hold up the others.
   */
  const domainsToLeaveOut = (): string[] => {
    limiter.prune();
    for (const [domain, at] of throttledAt) if (clock.now() - at >= THROTTLE_EPISODE_GAP_MS) throttledAt.delete(domain);
    return limiter.domains().filter((d) => limiter.pausedUntil(d) > 0 || (waiters.get(d)?.length ?? 0) >= limiter.allowed(d));
  };

  const claimBatch = async (limit: number, excludeDomains: string[]): Promise<number> => {
    const now = clock.now();
    const items = await batcher.run((trx) => claimDueQueueItems(trx, dialect, { owner, now, leaseUntil: now + leaseMs, limit, excludeDomains }), 'background');
    if (items.length === 0) return 0;
    for (const item of items) inMemory.set(item.id, item);
    try {
      const emailIds = [...new Set(items.map((i) => i.email_id))];
      // One read each for the batch: emails, suppressions, stored messages (not one per message).
      const [emails, suppressions, contents] = await Promise.all([
        listEmailsByIds(db, emailIds),
        listSuppressionsCovering(db, [...new Set(items.map((i) => i.workspace_id))], items.map((i) => i.recipient)),
        listEmailContents(db, emailIds),
      ]);
      const byId = new Map(emails.map((e) => [e.id, e]));
      // Hold: marketing mail of a domain the reputation guard paused waits in the queue.
      const deliverable = deps.hold ? await deps.hold(owner, items, byId) : items;
      if (deliverable.length < items.length) forget(items.filter((i) => !deliverable.includes(i)));
      const { jobs, orphans } = toJobs(deliverable, byId);
      if (orphans.length > 0) track(release(orphans, now));
      const prepared = new Map<string, Promise<Prepared>>();
      for (const job of jobs) track(runJob(job, suppressions, prepared, contents));
    } catch (err) {
      logger.error({ err }, 'could not start claimed jobs; releasing them');
      track(release(items, now));
    }
    return items.length;
  };

  /** Sleeps up to `ms`, or until an event of the kind `reason` names (or wake()) ends it early. */
  const sleep = (ms: number, reason: typeof sleepingFor) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = null;
        sleepingFor = null;
        resolve();
      }
      if (reason !== null) {
        wakeUp = done;
        sleepingFor = reason;
      }
    });

  function wake() {
    wakeUp?.();
  }

  /**
   * New mail was queued. An idle loop claims at once; a loop that left busy domains out claims
   * within 50 ms (new mail comes by the hundred a second: one claim per request would be one
   * write per request); a loop without room has nothing to claim into.
   */
  let soonTimer: NodeJS.Timeout | null = null;
  function mailQueued() {
    if (sleepingFor === 'work') wake();
    else if (sleepingFor === 'domains' && !soonTimer) {
      soonTimer = setTimeout(() => {
        soonTimer = null;
        if (sleepingFor === 'domains') wake();
      }, 50);
    }
  }

  /** How long a claim that left domains out may wait: until the first pause ends, at most a poll interval. */
  const untilHeldBackFree = (): number => {
    let ms = config.pollInterval;
    for (const d of heldBack) {
      const until = limiter.pausedUntil(d);
      if (until > 0) ms = Math.min(ms, Math.max(5, until - clock.now()));
    }
    return ms;
  };

  /**
   * The claim loop. It never sleeps the poll interval while due rows can be started: after a
   * full claim it claims again at once; with little room it waits for jobs to finish; when the
   * claim left domains out, it waits for their waiting jobs to run low. The poll interval only
   * bounds how late rows that become due (retries, scheduled mail) are noticed when idle.
   */
  const loop = async () => {
    while (!stopping) {
      const room = maxInMemory - inMemory.size;
      if (room < refillBatch) {
        await sleep(config.pollInterval, 'room');
        continue;
      }
      const asked = Math.min(room, MAX_CLAIM);
      const excluded = domainsToLeaveOut();
      let claimed = 0;
      try {
        claimed = await claimBatch(asked, excluded);
      } catch (err) {
        logger.error({ err }, 'queue claim failed');
      }
      if (stopping) break;
      heldBack = new Set(excluded);
      if (claimed >= asked) continue;
      if (excluded.length > 0) {
        // The rows left may all be for domains left out: claim again when they need more.
        await sleep(untilHeldBackFree(), 'domains');
      } else if (claimed > 0) {
        // The queue is drained for now: let more arrive before the next claim, so that a
        // steady stream is claimed in batches rather than one write per message.
        await sleep(Math.min(config.pollInterval, 50), null);
      } else {
        await sleep(config.pollInterval, 'work');
      }
    }
  };

  const renewLeases = async () => {
    const ids = [...inMemory.keys()];
    if (ids.length === 0) return;
    try {
      await extendLeases(db, owner, ids, clock.now() + leaseMs);
    } catch (err) {
      logger.error({ err }, 'could not renew leases');
    }
  };

  const settleAll = (ms: number) => {
    if (running.size === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      timer.unref();
      void Promise.allSettled([...running]).then(async () => {
        // Jobs may have started others (releases); wait for those too.
        while (running.size > 0) await Promise.allSettled([...running]);
        clearTimeout(timer);
        resolve(true);
      });
    });
  };

  return {
    owner,
    start() {
      if (loopDone) return;
      logger.info({ owner, concurrency }, 'delivery workers started');
      heartbeat = setInterval(() => void renewLeases(), Math.max(1000, Math.floor(leaseMs / 3)));
      heartbeat.unref();
      loopDone = loop();
    },
    wake: mailQueued,
    async stop() {
      if (stopping) return;
      stopping = true;
      wake();
      await loopDone;
      // Jobs waiting for a slot go back to the queue at once.
      for (const queue of waiters.values()) for (const resolve of queue.splice(0)) resolve('stopping');
      waiters.clear();
      const finished = await settleAll(config.shutdownTimeout * 1000);
      if (!finished) {
        logger.warn({ inFlight: running.size }, 'shutdown timeout: abandoning SMTP transactions in flight');
        abandoning = true;
        await smtp.close(true);
        await settleAll(5000);
      }
      if (heartbeat) clearInterval(heartbeat);
      if (pumpTimer) clearTimeout(pumpTimer);
      if (soonTimer) clearTimeout(soonTimer);
      await smtp.close();
      await signer.close();
      logger.info({ owner, leftInFlight: inMemory.size }, 'delivery workers stopped');
    },
  };
}
