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
import { findEmailContent, listEmailsByIds, refreshEmailStatus } from '../store/emails.js';
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
  const limiter = new DomainLimiter(domainLimitOf(config.domainLimits, config.defaultDomainLimit), () => clock.now());

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
  let waitingForRoom = false;
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
        smtpActive++;
        queue.shift()!('go');
      }
      if (queue.length === 0) waiters.delete(domain);
      else nextWait = Math.min(nextWait, limiter.waitMs(domain));
    }
    if (nextWait !== Infinity && nextWait > 0) {
      pumpTimer = setTimeout(pump, Math.max(nextWait, 5));
      pumpTimer.unref();
    }
  };

  const acquireSlot = (domain: string): Promise<SlotResult> => {
    if (stopping) return Promise.resolve('stopping');
    if (!waiters.has(domain) && smtpActive < concurrency && limiter.tryStart(domain)) {
      smtpActive++;
      return Promise.resolve('go');
    }
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

  const prepare = async (email: Email): Promise<Prepared> => {
    const [content, key] = await Promise.all([deps.loadContent ? deps.loadContent(email) : findEmailContent(db, email.id), dkimKeyFor(email)]);
    if (!content) return { kind: 'failed', category: 'message', reason: 'the message content is missing' };
    if (!key) return { kind: 'failed', category: 'config', reason: 'the sending domain has no DKIM key (was it removed?)' };
    const message = await signer.sign(content, key, clock.now());
    return { kind: 'message', message, returnPath: returnPathFor(email.id, bounceDomainOf(key.domain, config.returnPathSubdomain), secretKey) };
  };

  const jobContext = (prepared: Map<string, Promise<Prepared>>): JobContext => ({
    config,
    resolver,
    smtp,
    mtaSts: deps.mtaSts,
    logger,
    // Jobs of one message to several domains sign it once.
    prepare: (email) => {
      let p = prepared.get(email.id);
      if (!p) {
        p = prepare(email);
        prepared.set(email.id, p);
      }
      return p;
    },
  });

  // ---- writing results ---------------------------------------------------------------------

  const forget = (items: QueueItem[]) => {
    for (const item of items) inMemory.delete(item.id);
    if (waitingForRoom) wake();
  };

  const writeResults = async (results: RecipientResult[]) => {
    const now = clock.now();
    const written = await batcher.run((trx) => recordOutcomes(trx, results, { owner, now, retrySchedule: config.retrySchedule, maxQueueLifetime: config.maxQueueLifetime }));
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

  const release = async (items: QueueItem[], dueAt: number) => {
    if (items.length === 0) return;
    try {
      await batcher.run(async (trx) => {
        const now = clock.now();
        const emailIds = await releaseQueueItems(trx, owner, items.map((i) => i.id), dueAt, now);
        for (const id of emailIds) await refreshEmailStatus(trx, id, now);
      });
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

  const runJob = async (job: Job, suppressions: Suppression[], prepared: Map<string, Promise<Prepared>>) => {
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
      return release(toSend, slot === 'paused' ? limiter.pausedUntil(job.domain) || clock.now() : clock.now());
    }

    const sendStart = clock.now();
    let outcomes: Outcome[];
    try {
      outcomes = await deliverJob({ ...job, items: toSend }, jobContext(prepared));
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

  const claimBatch = async (limit: number): Promise<number> => {
    const now = clock.now();
    limiter.prune();
    const excludeDomains = limiter.blockedDomains();
    const items = await batcher.run((trx) => claimDueQueueItems(trx, dialect, { owner, now, leaseUntil: now + leaseMs, limit, excludeDomains }));
    if (items.length === 0) return 0;
    for (const item of items) inMemory.set(item.id, item);
    try {
      const [emails, suppressions] = await Promise.all([
        listEmailsByIds(db, [...new Set(items.map((i) => i.email_id))]),
        listSuppressionsCovering(db, [...new Set(items.map((i) => i.workspace_id))], items.map((i) => i.recipient)),
      ]);
      const byId = new Map(emails.map((e) => [e.id, e]));
      // Hold: marketing mail of a domain the reputation guard paused waits in the queue.
      const deliverable = deps.hold ? await deps.hold(owner, items, byId) : items;
      if (deliverable.length < items.length) forget(items.filter((i) => !deliverable.includes(i)));
      const { jobs, orphans } = toJobs(deliverable, byId);
      if (orphans.length > 0) track(release(orphans, now));
      const prepared = new Map<string, Promise<Prepared>>();
      for (const job of jobs) track(runJob(job, suppressions, prepared));
    } catch (err) {
      logger.error({ err }, 'could not start claimed jobs; releasing them');
      track(release(items, now));
    }
    return items.length;
  };

  /** Sleeps `ms`; `wakeable` sleeps end early on wake() (new mail, free room, stop). */
  const sleep = (ms: number, wakeable: boolean) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = null;
        resolve();
      }
      if (wakeable) wakeUp = done;
    });

  function wake() {
    wakeUp?.();
  }

  const loop = async () => {
    while (!stopping) {
      const room = maxInMemory - inMemory.size;
      let claimed = 0;
      let asked = 0;
      if (room > 0) {
        asked = Math.min(room, MAX_CLAIM);
        try {
          claimed = await claimBatch(asked);
        } catch (err) {
          logger.error({ err }, 'queue claim failed');
        }
      }
      if (stopping) break;
      if (room <= 0) {
        waitingForRoom = true;
        await sleep(config.pollInterval, true);
        waitingForRoom = false;
      } else if (claimed === 0) {
        await sleep(config.pollInterval, true);
      } else if (claimed < asked) {
        // The queue is drained for now: let more arrive before the next claim, so that a
        // steady stream is claimed in batches rather than one write per message.
        await sleep(Math.min(config.pollInterval, 50), false);
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
    wake,
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
      await smtp.close();
      await signer.close();
      logger.info({ owner, leftInFlight: inMemory.size }, 'delivery workers stopped');
    },
  };
}
