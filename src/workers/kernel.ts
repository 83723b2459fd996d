import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import { releaseLeases, renewLeases, type Lease, type LeasedTable } from '../store/lease.js';
import type { Db } from '../store/infra/db.js';
import { classifyFault } from '../shared/errors.js';
import { faultBackoff } from './ride-out.js';

/**
 * The worker kernel: the ground floor of everything driven by rows (Postal's worker process,
 * STYLE.md habit 13). It owns, for every job on it, what the jobs used to write each for
 * itself: the owner id of the leases, the loop that claims (woken at once when rows arrive,
 * else polling), lease renewal while work runs, group-committed results, and a stop that gives
 * back what did not start and waits, bounded, for what did. A job keeps only what is its own:
 * which rows it claims and what it does with them (delivery its destination slots, webhooks
 * their endpoint lanes).
 */

/** What a pass tells the kernel to do next. */
export type Next =
  /** The claim was full: more rows are likely due, claim again at once. */
  | 'again'
  /**
   * Sleep up to `ms`; `onWork` says what new rows (a commit to the job's table) do meanwhile:
   * end the sleep `now`, `soon` (after a short debounce: a busy job claims in batches), or
   * nothing (`ignore`: the job has no room; it wakes itself when it has).
   */
  | { sleep: number; onWork: 'now' | 'soon' | 'ignore' };

export type Why = 'start' | 'work' | 'poll' | 'wake' | 'again';

export interface WorkerJob {
  /** The table its leases are on (renewed while in hand, given back at a stop). */
  readonly table: LeasedTable;
  /** Tables whose new rows are work for it: a commit to one wakes it. */
  readonly wakeOn: readonly string[];
  /** How long a claim holds a row; renewed every third of it while the row is in hand. */
  readonly leaseMs: number;
  /** How long running work may finish at a stop before it is aborted. */
  readonly graceMs: number;
  /**
   * Claims what there is room for and starts it (`hand.run`); says what to do next. `why`: what
   * ended the sleep before it (`work`: new rows were committed; `poll`: the sleep ran out;
   * `wake`: the job's own wake; `again`: it asked to go on).
   */
  pass(why: Why): Promise<Next>;
  /** Stopping: start nothing more; returns the ids claimed but never started (given back at once). */
  halt(): string[];
  /** The grace ran out: abort work in flight (its rows go back when it returns). */
  abort?(): Promise<void>;
  /** After the stop, to close what the job opened. */
  close?(): Promise<void>;
}

/** What the kernel gives a job: its lease, its hand of rows, its work tracking and waking. */
export interface Hand {
  readonly owner: string;
  readonly log: Logger;
  /** A lease for a claim made now. */
  lease(): Lease;
  /** Rows just claimed: held (their leases renewed) until settled. */
  hold(ids: Iterable<string>): void;
  /** Rows done with: their result recorded, or given back. */
  settle(ids: Iterable<string>): void;
  /** Rows in hand now. */
  readonly held: number;
  /** Runs one piece of work; a stop waits for it. A failure is logged: the rows' leases run out. */
  run(work: () => Promise<void>): void;
  /** Ends the job's sleep now (room freed, a slot free, a destination running low). */
  wake(): void;
  readonly stopping: boolean;
}

interface KernelDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  batcher: CommitBatcher;
  /** Identifies this process's leases; made once here, so every job's rows carry one owner. */
  owner?: string;
}

export interface Kernel {
  readonly owner: string;
  /** Adds a job, built with its hand; started by start(). `name` tags its log lines. */
  add<J extends WorkerJob>(name: string, build: (hand: Hand) => J): J;
  start(): void;
  /** New rows in `table` were committed: wakes the jobs that take them. */
  committed(tables: Iterable<string>): void;
  /** Ends the sleep of the job named `name` (an operator's retry, a test moving its clock). */
  wake(name: string): void;
  /** Stops every job: nothing new claimed, unstarted rows given back, running work waited for (each job's grace), then aborted. */
  stop(): Promise<void>;
}

/** `host:pid:random`: unique per process and start, readable in `queue list`. */
export const newOwnerId = (): string => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** Work a new-rows signal waits for when the job sleeps with `soon`: a steady stream is claimed in batches. */
const SOON_MS = 50;
/** After the grace, aborted work has this long to return. */
const ABORT_WAIT_MS = 5000;

interface Running {
  name: string;
  job: WorkerJob;
  hand: Hand;
  inHand: Set<string>;
  work: Set<Promise<void>>;
  loop: Promise<void> | null;
  heartbeat: NodeJS.Timeout | null;
  /** Ends the current sleep; null when awake. */
  wakeUp: ((why: Why) => void) | null;
  onWork: 'now' | 'soon' | 'ignore';
  soon: NodeJS.Timeout | null;
  /** New rows were committed while the job was awake (its pass may have claimed before them). */
  arrived: boolean;
  /** The job woke itself while awake (room freed during its pass): its next sleep ends at once. */
  woken: boolean;
}

export function createKernel(deps: KernelDeps): Kernel {
  const { db, clock } = deps;
  const owner = deps.owner ?? newOwnerId();
  const jobs: Running[] = [];
  let started = false;
  let stopping = false;

  const wake = (r: Running, why: Why = 'wake') => {
    if (r.wakeUp) r.wakeUp(why);
    // A wake while the job is in its pass must not be lost: the pass may already have decided
    // to sleep on what the wake changes (no room, a destination left out).
    else if (why === 'wake') r.woken = true;
  };

  /** New rows for a sleeping job: what its sleep said they do. */
  const workArrived = (r: Running) => {
    if (r.onWork === 'now') wake(r, 'work');
    else if (r.onWork === 'soon' && !r.soon) r.soon = setTimeout(() => wake(r, 'work'), SOON_MS);
  };

  const sleep = (r: Running, ms: number, onWork: Running['onWork']) =>
    new Promise<Why>((resolve) => {
      const timer = setTimeout(() => done('poll'), ms);
      function done(why: Why) {
        clearTimeout(timer);
        if (r.soon) clearTimeout(r.soon);
        r.soon = null;
        r.wakeUp = null;
        resolve(why);
      }
      r.wakeUp = done;
      r.onWork = onWork;
      if (r.woken) {
        r.woken = false;
        done('wake');
      } else if (r.arrived) workArrived(r);
    });

  const loop = async (r: Running) => {
    let why: Why = 'start';
    let failures = 0;
    while (!stopping) {
      r.arrived = false;
      let next: Next;
      try {
        next = await r.job.pass(why);
        if (failures > 0) r.hand.log.info({ failures }, 'worker pass succeeded again after a storage fault');
        failures = 0;
      } catch (err) {
        // A fault of the database or the disk is waited out, backing off with jitter (a commit
        // ends the wait: the database is back). Anything else is a bug: logged, tried again.
        const fault = classifyFault(err);
        if (fault) {
          const wait = faultBackoff(failures++);
          r.hand.log.warn(
            { fault: fault.code, cause: (fault.cause as Error | undefined)?.message, failures, retryInMs: wait },
            'worker pass failed: storage fault',
          );
          next = { sleep: wait, onWork: 'now' };
        } else {
          r.hand.log.error({ err }, 'worker pass failed');
          next = { sleep: 1000, onWork: 'now' };
        }
      }
      if (stopping) break;
      why = next === 'again' ? 'again' : await sleep(r, next.sleep, next.onWork);
    }
  };

  const renew = async (r: Running) => {
    if (r.inHand.size === 0) return;
    try {
      await renewLeases(db, r.job.table, owner, [...r.inHand], clock.now() + r.job.leaseMs);
    } catch (err) {
      // Renewed again at the next beat; a lease that runs out meanwhile is taken by any worker (at least once).
      const fault = classifyFault(err);
      if (fault)
        r.hand.log.warn(
          { fault: fault.code, cause: (fault.cause as Error | undefined)?.message, held: r.inHand.size },
          'could not renew leases: storage fault',
        );
      else r.hand.log.error({ err }, 'could not renew leases');
    }
  };

  /** Waits for the job's work to settle, at most `ms`; true when all did. */
  const settled = async (r: Running, ms: number): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const all = (async () => {
      // Work may start more work (a give-back); wait for that too.
      while (r.work.size > 0) await Promise.allSettled([...r.work]);
      return true as const;
    })();
    const done = await Promise.race([all, deadline]);
    clearTimeout(timer);
    return done;
  };

  const release = async (r: Running, ids: string[]) => {
    if (ids.length === 0) return;
    try {
      await releaseLeases(db, r.job.table, owner, ids, { now: clock.now() });
    } catch (err) {
      r.hand.log.error({ err }, 'could not give leases back (they run out instead)');
    }
    for (const id of ids) r.inHand.delete(id);
  };

  const stopJob = async (r: Running) => {
    wake(r);
    await r.loop;
    await release(r, r.job.halt());
    if (!(await settled(r, r.job.graceMs))) {
      r.hand.log.warn({ inFlight: r.work.size }, 'stop: grace over, aborting work in flight');
      await r.job.abort?.();
      await settled(r, ABORT_WAIT_MS);
    }
    if (r.heartbeat) clearInterval(r.heartbeat);
    const left = [...r.inHand];
    await release(r, left);
    await r.job.close?.();
    r.hand.log.info({ owner, leftInHand: left.length }, `${r.name} stopped`);
  };

  return {
    owner,
    add(name, build) {
      // eslint-disable-next-line no-restricted-syntax -- the job and its hand are filled in just below, before anything reads them
      const r = {
        name,
        inHand: new Set<string>(),
        work: new Set<Promise<void>>(),
        loop: null,
        heartbeat: null,
        wakeUp: null,
        onWork: 'now',
        soon: null,
        arrived: false,
        woken: false,
      } as unknown as Running;
      const log = deps.logger.child({ component: name });
      r.hand = {
        owner,
        log,
        lease: () => {
          const now = clock.now();
          return { owner, now, until: now + r.job.leaseMs };
        },
        hold: (ids) => {
          for (const id of ids) r.inHand.add(id);
        },
        settle: (ids) => {
          for (const id of ids) r.inHand.delete(id);
        },
        get held() {
          return r.inHand.size;
        },
        run: (work) => {
          const p: Promise<void> = work()
            .catch((err: unknown) => log.error({ err }, 'worker task failed'))
            .finally(() => r.work.delete(p));
          r.work.add(p);
        },
        wake: () => wake(r),
        get stopping() {
          return stopping;
        },
      };
      r.job = build(r.hand);
      jobs.push(r);
      if (started) startJob(r);
      // eslint-disable-next-line no-restricted-syntax -- add's type parameter is the job build returned
      return r.job as never;
    },

    start() {
      if (started) return;
      started = true;
      for (const r of jobs) startJob(r);
    },

    committed(tables) {
      const changed = new Set(tables);
      for (const r of jobs) {
        if (!r.job.wakeOn.some((t) => changed.has(t))) continue;
        if (r.wakeUp) workArrived(r);
        else r.arrived = true;
      }
    },

    wake(name) {
      for (const r of jobs) if (r.name === name) wake(r);
    },

    async stop() {
      if (stopping) return;
      stopping = true;
      await Promise.all(jobs.map((r) => stopJob(r)));
    },
  };

  function startJob(r: Running) {
    r.hand.log.info({ owner }, `${r.name} started`);
    r.heartbeat = setInterval(() => void renew(r), Math.max(1000, Math.floor(r.job.leaseMs / 3)));
    r.heartbeat.unref();
    r.loop = loop(r);
  }
}
