import type { Db, Dialect } from './db.js';

type Work<T> = (trx: Db) => Promise<T>;

/**
 * `foreground`: a caller is waiting for its answer (an API request, an SMTP DATA), so it goes
 * first. `background`: delivery's claims and results, campaign pages; they commit in their
 * own, smaller transactions, so that an intake write never waits behind a large one.
 */
export type Lane = 'foreground' | 'background';
interface Pending {
  work: Work<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * Group commit: writes handed in by concurrent requests are run in one transaction, so they
 * share one fsync instead of paying one each (PERFORMANCE.md: ~5k vs ~35k rows/s). Each
 * caller's promise settles only after the transaction holding its write has committed.
 *
 * If a batch fails, its items are retried one transaction each, so one bad write cannot fail
 * its neighbours. Work must therefore be safe to run again after a rollback (plain inserts
 * and updates are).
 */
export class CommitBatcher {
  private readonly queues: Record<Lane, Pending[]> = { foreground: [], background: [] };
  /** Batches being committed now. */
  private active = 0;
  private scheduled = false;

  /**
   * @param windowMs how long the first write of a batch waits for others to join. SQLite
   *   commits block the event loop, so without a window a batch holds only what arrived
   *   during one turn; 2 ms took batches from ~6 to ~19 writes and throughput up by half in
   *   the send bench, for 2 ms of latency.
   * @param concurrency batches committed at once. SQLite has one writer, so 1. On PostgreSQL
   *   every statement is a network round trip: with one batch at a time, all writes of the
   *   node would queue behind one connection, so several batches commit side by side.
   */
  constructor(
    private readonly db: Db,
    private readonly windowMs = 2,
    private readonly maxBatch = 256,
    private readonly concurrency = 1,
    /** Background writes per transaction: each can be large (a delivery batch's results). */
    private readonly maxBackgroundBatch = 4,
  ) {}

  run<T>(work: Work<T>, lane: Lane = 'foreground'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queues[lane].push({ work, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  private pending(): number {
    return this.queues.foreground.length + this.queues.background.length;
  }

  /** The next transaction's writes: every waiting intake write first, else a few background ones. */
  private nextBatch(): Pending[] {
    const { foreground, background } = this.queues;
    return foreground.length > 0 ? foreground.splice(0, this.maxBatch) : background.splice(0, this.maxBackgroundBatch);
  }

  /** Starts a flusher after the window, unless one is starting or all are busy (they drain the queue). */
  private schedule(): void {
    if (this.scheduled || this.active >= this.concurrency) return;
    this.scheduled = true;
    this.active++;
    const start = () => {
      this.scheduled = false;
      void this.flush();
    };
    if (this.windowMs > 0) setTimeout(start, this.windowMs);
    else setImmediate(start);
  }

  private async flush(): Promise<void> {
    while (this.pending() > 0) {
      const batch = this.nextBatch();
      // Writes arriving while this batch commits start another batch beside it (PostgreSQL).
      this.schedule();
      let results: unknown[];
      try {
        results = await this.db.transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const item of batch) out.push(await item.work(trx));
          return out;
        });
      } catch {
        await this.runOneByOne(batch);
        continue;
      }
      batch.forEach((item, i) => item.resolve(results[i]));
    }
    this.active--;
  }

  private async runOneByOne(batch: Pending[]): Promise<void> {
    for (const item of batch) {
      try {
        item.resolve(await this.db.transaction().execute((trx) => item.work(trx)));
      } catch (err) {
        item.reject(err);
      }
    }
  }
}

/** The process's batcher: on PostgreSQL, half the pool commits batches side by side; the rest serves reads, claims and jobs. */
export const createCommitBatcher = (db: Db, dialect: Dialect, poolSize: number): CommitBatcher =>
  new CommitBatcher(db, undefined, undefined, dialect === 'postgres' ? Math.max(1, Math.floor(poolSize / 2)) : 1);
