import type { Db } from './db.js';

interface Pending<T> {
  item: T;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Group commit for writes that gain from seeing each other: items added by concurrent callers
 * are handed to `write` together, in one transaction, so they share one fsync and `write` can
 * merge statements (a multi-row insert, one update per key). Each caller's promise settles
 * once the transaction holding its item has committed. If a batch fails, its items are
 * written one transaction each, so one bad item cannot fail its neighbours.
 */
export class BatchWriter<T> {
  private queue: Pending<T>[] = [];
  private flushing = false;

  constructor(
    private readonly db: Db,
    private readonly write: (trx: Db, items: T[]) => Promise<void>,
    private readonly maxBatch = 256,
    /** How long the first item of a batch waits for company: more per commit, fewer fsyncs. */
    private readonly windowMs = 0,
  ) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        this.schedule();
      }
    });
  }

  /** Lets the other writers of this turn of the event loop (or of the window) join the batch. */
  private schedule(): void {
    if (this.windowMs > 0 && this.queue.length < this.maxBatch) setTimeout(() => void this.flush(), this.windowMs);
    else setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, this.maxBatch);
    try {
      await this.db.transaction().execute((trx) => this.write(trx, batch.map((p) => p.item)));
      for (const p of batch) p.resolve();
    } catch {
      for (const p of batch) {
        try {
          await this.db.transaction().execute((trx) => this.write(trx, [p.item]));
          p.resolve();
        } catch (err) {
          p.reject(err);
        }
      }
    }
    if (this.queue.length > 0) this.schedule();
    else this.flushing = false;
  }
}
