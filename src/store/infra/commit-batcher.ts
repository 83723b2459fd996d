import type { Db } from './db.js';
import { commitConcurrency, type Dialect } from './dialect.js';
import { writeScope } from './wal-sync.js';
import { inUnit, outsideUnit } from './ambient-transaction.js';

type Work<T> = (trx: Db) => Promise<T>;

/**
 * `foreground`: a caller is waiting for its answer (an API request, an SMTP DATA), so it goes
 * first. `background`: delivery's claims and results, campaign pages; they commit in their
 * own, smaller transactions, so that an intake write never waits behind a large one.
 */
type Lane = 'foreground' | 'background';
interface Pending {
  /** The write on its own (a merged write with this one item): how it runs alone, and after a failed batch. */
  work: Work<unknown>;
  /** A write of a kind the batch writes once for all its items (see `merge`). */
  merged?: { kind: Merged<unknown>; item: unknown };
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * Writes of one kind that concurrent callers hand in (`CommitBatcher.merge`), written by one
 * call for every item of a batch: a multi-row insert in place of one insert per caller. On
 * PostgreSQL each statement is a round trip, so a batch of 50 sends costs three inserts, not 150.
 * `write` must be safe to run again after a rollback, with fewer items (a failed batch is
 * retried one item at a time).
 */
export interface Merged<T> {
  write(trx: Db, items: T[]): Promise<void>;
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

  private readonly windowMs: number;
  private readonly maxBatch: number;
  private readonly concurrency: number;
  private readonly maxBackgroundBatch: number;
  private readonly durable: () => Promise<void>;

  constructor(
    private readonly db: Db,
    options: {
      /**
       * How long the first write of a batch waits for others to join. SQLite commits block
       * the event loop, so without a window a batch holds only what arrived during one turn;
       * 2 ms took batches from ~6 to ~19 writes and throughput up by half in the send bench.
       */
      windowMs?: number;
      maxBatch?: number;
      /**
       * Batches committed at once. SQLite has one writer, so 1. On PostgreSQL every statement
       * is a network round trip: with one batch at a time, all writes of the node would queue
       * behind one connection, so several batches commit side by side.
       */
      concurrency?: number;
      /** Background writes per transaction: each can be large (a delivery batch's results). */
      maxBackgroundBatch?: number;
      /** Resolves once what was committed is on disk (Store.durable): callers settle after it. */
      durable?: () => Promise<void>;
    } = {},
  ) {
    this.windowMs = options.windowMs ?? 2;
    this.maxBatch = options.maxBatch ?? 256;
    this.concurrency = options.concurrency ?? 1;
    this.maxBackgroundBatch = options.maxBackgroundBatch ?? 4;
    this.durable = options.durable ?? (() => Promise.resolve());
  }

  run<T>(work: Work<T>, lane: Lane = 'foreground'): Promise<T> {
    // Inside a use case's own transaction (ambient-transaction.ts) the write is part of it: a
    // batch would wait for the connection that transaction holds until the use case ends.
    if (inUnit()) return work(this.db);
    return new Promise<T>((resolve, reject) => {
      this.queues[lane].push({ work, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Hands `item` to `kind`'s write in the next transaction, together with the items other
   * callers hand in meanwhile; settles once that transaction is committed and durable.
   * `kind` is compared by identity: create it once, not per call.
   */
  merge<T>(kind: Merged<T>, item: T, lane: Lane = 'foreground'): Promise<void> {
    const work = (trx: Db) => kind.write(trx, [item]);
    if (inUnit()) return work(this.db);
    return new Promise<void>((resolve, reject) => {
      this.queues[lane].push({ work, merged: { kind, item }, resolve: () => resolve(), reject });
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
    // The flusher runs outside the scope of the request that woke it: its writes are the
    // batch's, made durable for every caller below, not that request's own (writeScope).
    writeScope.exit(() =>
      outsideUnit(() => {
        if (this.windowMs > 0) setTimeout(start, this.windowMs);
        else setImmediate(start);
      }),
    );
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
          const merged = new Map<Merged<unknown>, unknown[]>();
          for (const item of batch) {
            if (item.merged) {
              const { kind, item: one } = item.merged;
              merged.set(kind, [...(merged.get(kind) ?? []), one]);
              out.push(undefined);
            } else {
              out.push(await item.work(trx));
            }
          }
          for (const [kind, items] of merged) await kind.write(trx, items);
          return out;
        });
      } catch {
        await this.runOneByOne(batch);
        continue;
      }
      // The next batch commits while this one's sync runs (SQLite: in the thread pool).
      this.settleWhenDurable(batch, results);
    }
    this.active--;
  }

  private settleWhenDurable(batch: Pending[], results: unknown[]): void {
    this.durable().then(
      () => batch.forEach((item, i) => item.resolve(results[i])),
      (err: unknown) => batch.forEach((item) => item.reject(err)),
    );
  }

  private async runOneByOne(batch: Pending[]): Promise<void> {
    for (const item of batch) {
      try {
        const result = await this.db.transaction().execute((trx) => item.work(trx));
        this.settleWhenDurable([item], [result]);
      } catch (err) {
        item.reject(err);
      }
    }
  }
}

/** The process's batcher: on PostgreSQL, half the pool commits batches side by side; the rest serves reads, claims and jobs. */
export const createCommitBatcher = (
  db: Db,
  dialect: Dialect,
  poolSize: number,
  durable?: () => Promise<void>,
): CommitBatcher =>
  new CommitBatcher(db, { concurrency: commitConcurrency(dialect, poolSize), ...(durable ? { durable } : {}) });

interface Collected<T> {
  item: T;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Group commit for writes that gain from seeing each other (a multi-row insert, one update per
 * key): items handed in by concurrent callers wait up to `windowMs` for company (or until `max`
 * are in), then one `write(trx, items)` commits them in the batcher's background lane. Each
 * caller's promise settles once its item is committed and durable. If the batch fails, each
 * item is written on its own, so one bad item cannot fail its neighbours.
 */
export class Collector<T> {
  private pending: Collected<T>[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly batcher: CommitBatcher,
    private readonly write: (trx: Db, items: T[]) => Promise<void>,
    private readonly options: { windowMs: number; max: number },
  ) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      // Shared by every request: never run in the unit of the one that filled it (ambient-transaction.ts).
      if (this.pending.length >= this.options.max) outsideUnit(() => this.flush());
      else this.timer ??= outsideUnit(() => setTimeout(() => this.flush(), this.options.windowMs));
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending.splice(0, this.options.max);
    if (this.pending.length > 0) this.timer = setTimeout(() => this.flush(), this.options.windowMs);
    if (batch.length === 0) return;
    this.batcher
      .run(
        (trx) =>
          this.write(
            trx,
            batch.map((p) => p.item),
          ),
        'background',
      )
      .then(
        () => batch.forEach((p) => p.resolve()),
        () => {
          for (const p of batch)
            this.batcher.run((trx) => this.write(trx, [p.item]), 'background').then(p.resolve, p.reject);
        },
      );
  }
}
