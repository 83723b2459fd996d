import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import { Collector, type CommitBatcher } from '../store/commit-batcher.js';
import type { Db, Dialect } from '../store/db.js';
import { listEmailContents, listEmailsByIds, type Email, type QueueItem } from '../store/emails.js';
import { releaseLeases } from '../store/lease.js';
import { claimDueQueueItems } from '../store/queue.js';
import { listSuppressionsCovering } from '../store/suppressions.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';
import { cachedResolver } from './cached-resolver.js';
import { countOutcomes } from './count-outcomes.js';
import type { Job, JobContext, Prepared } from './deliver-job.js';
import type { DkimSigner } from './dkim-signer.js';
import { DomainLimiter } from './domain-limiter.js';
import { destinationLimitOf, groupOfKey, keyOf, limitSetting } from './destination-key.js';
import { groupOf, providerTable } from './providers.js';
import { resolveMxRoute } from './resolve-route.js';
import { DeliveryGate, type DestinationState } from './gate.js';
import type { MtaStsPolicies } from './mta-sts.js';
import type { Outcome, RecipientResult } from './outcome.js';
import { messagePreparer } from './prepare-message.js';
import { processJob, type Destination, type WarmupShare } from './process-job.js';
import { recordOutcomes } from './record-outcomes.js';
import { rideOut } from '../workers/ride-out.js';
import type { SmtpClient } from './smtp-client.js';
import { sourcePicker, type Source } from './source-address.js';
import { warmupDay, warmupDirectory } from './warmup.js';
import { findWarmupCount, giveBackWarmup, reserveWarmup, type IpWarmup } from '../store/warmups.js';
import { rulesWith } from './response-rules.js';

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

/** RFC 5321 §4.5.3.1.8: servers must take at least 100 recipients per transaction. */
const MAX_RECIPIENTS_PER_TRANSACTION = 100;
const MAX_CLAIM = 500;
/** How long finished results wait to share a commit, and how many jobs' results at most. */
const RECORD_WINDOW_MS = 20;
const RECORD_BATCH = 200;
/** A destination that held mail back within this long is still in the same throttling episode (one log line). */
const THROTTLE_EPISODE_GAP_MS = 60_000;
/** A destination used this recently is still shown (GET /v1/delivery/providers) after the limiter forgot it. */
const RECENT_MS = 5 * 60_000;

/**
 * Delivery, a job on the worker kernel. A pass claims due queue rows, holds what the
 * reputation guard paused, groups the rest into jobs (one message, the recipients it has at
 * one domain) and starts each (process-job.ts: hold if suppressed, simulate if a test, wait for
 * a slot, route, sign, transmit). Results commit together (group commit).
 *
 * What is its own: the slots (gate.ts: the node's concurrency and each destination's limits)
 * and the back-pressure between them and the claim: at most `maxInMemory` rows in hand; a
 * destination with a full refill already waiting is left out of the next claim, so one busy
 * destination cannot fill the memory and hold up the others.
 */
export function deliveryJob(hand: Hand, deps: DeliveryDeps): DeliveryJob {
  const { db, dialect, config, clock } = deps;
  const concurrency = config.concurrency;
  /** Claimed rows kept in hand at most: enough to keep every slot busy while the next claim runs. */
  const maxInMemory = Math.max(concurrency * 4, 50);
  /** Claims happen when at least this much room is free: a claim is a write, so rows come in batches. */
  const refillBatch = Math.max(1, Math.floor(maxInMemory / 4));
  const limitOf = destinationLimitOf(config);
  const limiter = new DomainLimiter(limitOf, () => clock.now(), { pauseMs: config.backoff.pauseSeconds * 1000, maxPauseMs: config.backoff.maxPauseSeconds * 1000 });
  const resolver = cachedResolver(deps.resolver, () => clock.now());
  const providers = providerTable(config.providers);
  /** Each destination (group and source address): what it is, and the recipient domains lately delivered through it. */
  const destinations = new Map<string, { group: string; provider: string | null; source: string | null; domains: Set<string>; usedAt: number }>();
  /** Each recipient domain: the destinations its mail went through lately (the claim leaves a domain out when all of them are full or paused). */
  const domainKeys = new Map<string, Set<string>>();
  const prepare = messagePreparer({ db, clock, secretKey: deps.secretKey, signer: deps.signer, returnPathSubdomain: config.returnPathSubdomain, compose: deps.compose });
  const throttledAt = new Map<string, number>();
  const sources = sourcePicker(db, () => clock.now(), config.hostname);
  /** Each pool's next address: its mail is spread over all of them in turn. */
  const turns = new Map<string, number>();
  const warmups = warmupDirectory(db, () => clock.now());

  /**
   * The pool's addresses for a job, in the order to try them: each pool's mail spread over its
   * addresses in turn; addresses in warm-up (under today's cap) first for marketing, last for
   * transactional mail, which takes the warm addresses first.
   */
  const candidatesFor = async (job: Job): Promise<Array<{ source: Source; warmup: IpWarmup | undefined }>> => {
    const list = await sources.sourcesOf(job.email.ip_pool_id);
    const key = job.email.ip_pool_id ?? '';
    const turn = (turns.get(key) ?? 0) % list.length;
    turns.set(key, (turn + 1) % list.length);
    const rotated = [...list.slice(turn), ...list.slice(0, turn)];
    const now = clock.now();
    const all = await Promise.all(rotated.map(async (source) => ({ source, warmup: source.address ? await warmups.get(source.address) : undefined })));
    const warming = all.filter((c) => c.warmup && warmupDay(c.warmup, config.warmup, now).cap !== null);
    const warm = all.filter((c) => !warming.includes(c));
    return job.email.type === 'transactional' ? [...warm, ...warming] : [...warming, ...warm];
  };

  /**
   * Where a job's limits come from: its source address and its group (the recipient domain
   * when delivery.domainLimits names it, else the mailbox provider of its MX hosts, else its
   * MX host). The MX look-up is the one delivery makes next (cached). An address in warm-up
   * takes the job only if its recipients fit under today's cap for the group (counted in the
   * database, shared by the nodes); when no address of the pool can take it, it waits.
   */
  const destinationOf = async (job: Job, recipients: number): Promise<Destination | { wait: number; reason: string }> => {
    const own = Object.hasOwn(config.domainLimits, job.domain);
    let hosts: Array<{ name: string; priority: number }> = [];
    if (!own && !config.relay) {
      const mx = await resolveMxRoute(job.domain, resolver);
      if (mx.kind === 'hosts') hosts = mx.hosts;
    }
    const { group, provider } = groupOf(providers, job.domain, hosts, own);
    const now = clock.now();
    let source: Source | null = null;
    let warmup: WarmupShare | undefined;
    let until = Infinity;
    const full: string[] = [];
    for (const c of await candidatesFor(job)) {
      const day = c.warmup ? warmupDay(c.warmup, config.warmup, now) : null;
      if (day && day.cap !== null) {
        const cap = day.cap;
        const share = { address: c.source.address!, provider: group, periodStart: day.periodStart };
        // Only a look here: the job counts against the cap when it has its slot (processJob).
        if (recipients > cap || (await findWarmupCount(db, share)) + recipients > cap) {
          until = Math.min(until, day.nextPeriod);
          full.push(`${c.source.address} has sent its ${cap} of warm-up day ${day.day + 1} to ${group}`);
          continue;
        }
        warmup = {
          reserve: () => deps.batcher.run((trx) => reserveWarmup(trx, share, recipients, cap), 'background'),
          giveBack: (n) => deps.batcher.run((trx) => giveBackWarmup(trx, share, n), 'background'),
        };
      }
      source = c.source;
      break;
    }
    if (!source) {
      const pool = (await sources.sourcesOf(job.email.ip_pool_id))[0]?.pool ?? 'default';
      return { wait: until, reason: `IP warm-up: ${full.join('; ')}, and pool ${pool} has no warm address: waits until ${new Date(until).toISOString()}` };
    }
    const key = keyOf(group, source.address);
    let d = destinations.get(key);
    if (!d) {
      d = { group, provider, source: source.address, domains: new Set(), usedAt: 0 };
      destinations.set(key, d);
    }
    d.usedAt = clock.now();
    d.domains.add(job.domain);
    const keys = domainKeys.get(job.domain) ?? new Set<string>();
    keys.add(key);
    domainKeys.set(job.domain, keys);
    return { key, source, group, messagesPerConnection: limitOf(key).messagesPerConnection, warmup };
  };
  /** Destinations the last claim left out (paused, or with enough of their rows waiting). */
  let heldBack = new Set<string>();
  /** The loop sleeps until room is free. */
  let waitingForRoom = false;
  /** Cut off by the stop: outcomes of aborted transactions are not recorded. */
  let abandoning = false;

  /**
   * A job that waits because of its destination's limit (not the node's own concurrency) is
   * a throttled wait: counted by destination class, and logged once per domain and episode.
   */
  const throttled = (key: string) => {
    const hold = limiter.holdOf(key);
    if (hold === null) return;
    const d = destinations.get(key);
    // Counted by the class of a recipient domain it serves (gmail, microsoft, …).
    deps.metrics?.throttledWait(d ? ([...d.domains][0] ?? d.group) : groupOfKey(key), hold);
    const now = clock.now();
    const last = throttledAt.get(key);
    throttledAt.set(key, now);
    if (last !== undefined && now - last < THROTTLE_EPISODE_GAP_MS) return;
    const limit = limitOf(key);
    hand.log.info(
      {
        destination: groupOfKey(key),
        source: d?.source ?? null,
        domains: d ? [...d.domains].slice(0, 10) : [],
        hold,
        concurrency: limiter.allowed(key),
        perMinute: limiter.snapshot(key).perMinute,
        limitPerMinute: limit.perMinute,
        setting: limitSetting(config, groupOfKey(key)),
      },
      hold === 'paused' ? 'destination asked us to slow down: its mail waits' : 'destination limit reached: mail to it waits its turn',
    );
  };

  const gate = new DeliveryGate(limiter, concurrency, {
    throttled,
    // A slot was given: a destination the claim left out whose waiting jobs run low gets a claim.
    started: (key) => {
      const d = destinations.get(key);
      if (d && [...d.domains].some((domain) => heldBack.has(domain)) && gate.waiting(key) <= limiter.allowed(key) / 2) hand.wake();
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

  const release = async (items: QueueItem[], dueAt: number, note?: string) => {
    if (items.length === 0) return;
    try {
      await deps.batcher.run((trx) => releaseLeases(trx, 'queue_items', hand.owner, items.map((i) => i.id), { dueAt, now: clock.now(), note }), 'background');
    } catch (err) {
      hand.log.error({ err }, 'could not release queue items (their leases run out)');
    } finally {
      forget(items);
    }
  };

  // ---- results: group commit, then log and count ------------------------------------------

  interface Recorded {
    results: RecipientResult[];
    /** What the commit wrote (rows still ours), set by the write that committed. */
    written: Array<{ result: RecipientResult; outcome: Outcome }>;
  }
  const recorder = new Collector<Recorded>(
    deps.batcher,
    async (trx, batch) => {
      const written = await recordOutcomes(trx, batch.flatMap((b) => b.results), { owner: hand.owner, now: clock.now(), retrySchedule: config.retrySchedule, maxQueueLifetime: config.maxQueueLifetime });
      const byItem = new Map(written.map((w) => [w.result.item.id, w]));
      for (const b of batch) b.written = b.results.flatMap((r) => byItem.get(r.item.id) ?? []);
    },
    { windowMs: RECORD_WINDOW_MS, max: RECORD_BATCH },
  );

  const logResults = (results: RecipientResult[]) => {
    for (const r of results) {
      const o = r.outcome;
      const fields = { emailId: r.email.id, workspaceId: r.email.workspace_id, queueItemId: r.item.id, outcome: o.kind, code: 'code' in o ? o.code : null, mxHost: 'mxHost' in o ? o.mxHost : null };
      if (o.kind === 'delivered') hand.log.debug(fields, 'delivered');
      else hand.log.info({ ...fields, category: 'category' in o ? o.category : undefined, response: 'response' in o ? o.response : undefined }, o.kind);
    }
  };

  const record = async (results: RecipientResult[]): Promise<void> => {
    if (results.length === 0) return;
    const entry: Recorded = { results, written: [] };
    try {
      // A delivered message whose result is lost is sent again: through a fault of the
      // database, the result is written again (backing off) for as long as the lease may
      // still be ours; after that the rows go to whoever claims them (at least once).
      await rideOut(() => recorder.add(entry), {
        forMs: config.leaseSeconds * 1000,
        stopping: () => hand.stopping,
        onFault: (err, attempt, retryInMs) => hand.log.warn({ cause: (err as Error).message, attempt, retryInMs, results: results.length }, 'could not record delivery results yet: storage fault'),
      });
      logResults(results);
      // Counted once committed: a rolled-back batch is written again, one job at a time.
      if (deps.metrics) countOutcomes(deps.metrics, entry.written, clock.now());
    } catch (err) {
      // No longer renewed: the lease runs out and any worker retries the rows (at least once).
      hand.log.error({ err, emailIds: [...new Set(results.map((r) => r.email.id))] }, 'could not record delivery results');
    } finally {
      forget(results.map((r) => r.item));
    }
  };

  // ---- the claim ---------------------------------------------------------------------------

  const rules = rulesWith(config.slowDownReplies);
  const context = (prepared: Map<string, Promise<Prepared>>, contents: Map<string, Buffer>): JobContext => ({
    config,
    rules,
    resolver,
    smtp: deps.smtp,
    mtaSts: deps.mtaSts,
    logger: hand.log,
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
   * Destinations the claim leaves in the queue: paused ones, and those with a full refill (as
   * many jobs as they may run at once) already waiting in hand.
   */
  const domainsToLeaveOut = (): string[] => {
    limiter.prune();
    for (const [key, at] of throttledAt) if (clock.now() - at >= THROTTLE_EPISODE_GAP_MS) throttledAt.delete(key);
    const known = new Set(limiter.domains());
    // Destinations the limiter forgot (idle, at full health) are shown a while longer, then forgotten.
    for (const [key, d] of destinations) if (!known.has(key) && gate.waiting(key) === 0 && clock.now() - d.usedAt >= RECENT_MS) destinations.delete(key);
    const full = new Set([...known].filter((k) => limiter.pausedUntil(k) > 0 || gate.waiting(k) >= limiter.allowed(k)));
    const out: string[] = [];
    for (const [domain, keys] of domainKeys) {
      for (const k of keys) if (!destinations.has(k)) keys.delete(k);
      if (keys.size === 0) domainKeys.delete(domain);
      else if ([...keys].every((k) => full.has(k))) out.push(domain);
    }
    return out;
  };

  const claimBatch = async (limit: number, excluded: string[]): Promise<number> => {
    const items = await deps.batcher.run((trx) => claimDueQueueItems(trx, dialect, hand.lease(), limit, excluded), 'background');
    if (items.length === 0) return 0;
    hand.hold(items.map((i) => i.id));
    const now = clock.now();
    try {
      const emailIds = [...new Set(items.map((i) => i.email_id))];
      // One read each for the batch: emails, suppressions, stored messages (not one per message).
      const [emails, suppressions, contents] = await Promise.all([
        listEmailsByIds(db, emailIds),
        listSuppressionsCovering(db, [...new Set(items.map((i) => i.workspace_id))], items.map((i) => i.recipient)),
        listEmailContents(db, emailIds),
      ]);
      const byId = new Map(emails.map((e) => [e.id, e]));
      const deliverable = deps.hold ? await deps.hold(hand.owner, items, byId) : items;
      if (deliverable.length < items.length) forget(items.filter((i) => !deliverable.includes(i)));
      const { jobs, orphans } = toJobs(deliverable, byId);
      if (orphans.length > 0) hand.run(() => release(orphans, now));
      const prepared = new Map<string, Promise<Prepared>>();
      for (const job of jobs) {
        hand.run(() =>
          processJob(job, {
            clock,
            suppressions,
            gate,
            limiter,
            context: context(prepared, contents),
            log: hand.log,
            abandoning: () => abandoning,
            record,
            release,
            destinationOf,
          }),
        );
      }
    } catch (err) {
      hand.log.error({ err }, 'could not start claimed jobs; releasing them');
      hand.run(() => release(items, now));
    }
    return items.length;
  };

  /** How long a claim that left destinations out may wait: until the first pause ends, at most a poll interval. */
  const untilHeldBackFree = (): number => {
    let ms = config.pollInterval;
    for (const d of heldBack) {
      for (const key of domainKeys.get(d) ?? []) {
        const until = limiter.pausedUntil(key);
        if (until > 0) ms = Math.min(ms, Math.max(5, until - clock.now()));
      }
    }
    return ms;
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
      const excluded = domainsToLeaveOut();
      const claimed = await claimBatch(asked, excluded);
      heldBack = new Set(excluded);
      if (claimed >= asked) return 'again';
      // The rows left may all be for destinations left out: claim again when they need more.
      if (excluded.length > 0) return { sleep: untilHeldBackFree(), onWork: 'soon' };
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

    adoptPauses(pauses) {
      let changed = false;
      for (const p of pauses) {
        if (limiter.pauseUntil(p.key, p.until)) {
          changed = true;
          hand.log.info({ destination: groupOfKey(p.key), source: destinations.get(p.key)?.source ?? null, pausedUntil: new Date(p.until).toISOString() }, 'another node was asked to slow down: pausing here too');
        }
      }
      if (changed) gate.paused();
    },

    destinations: () => {
      const held = gate.destinations();
      const seen = new Set(held.map((s) => s.domain));
      // Used lately but idle at full health (the limiter forgot them): shown as normal, at their limits.
      const idle: DestinationState[] = [...destinations.keys()]
        .filter((key) => !seen.has(key))
        .map((key) => ({ domain: key, active: 0, allowed: limitOf(key).concurrency, waiting: 0, pausedUntil: 0, hold: null, state: 'normal', perMinute: limitOf(key).perMinute, lastReply: null, lastReplyAt: null }));
      return [...held, ...idle].map((s) => {
        const d = destinations.get(s.domain);
        const limit = limitOf(s.domain);
        return { ...s, provider: d?.group ?? groupOfKey(s.domain), named: d ? d.provider !== null : false, source: d?.source ?? null, domains: d ? [...d.domains].sort() : [], limit: { concurrency: limit.concurrency, perMinute: limit.perMinute } };
      });
    },
  };
}
