import { AsyncLocalStorage } from 'node:async_hooks';
import { promises as fs } from 'node:fs';

/**
 * Marks whether code running in a scope wrote to the database (any statement but a read, run
 * in that async context). The HTTP layer opens one per request and waits for durability only
 * when the request wrote outside the commit batcher, whose callers wait for it already.
 */
export const writeScope = new AsyncLocalStorage<{ wrote: boolean }>();

export interface FileSync {
  /** Makes what was written to the file durable. */
  (path: string): Promise<void>;
}

/**
 * fdatasync of a file through the libuv thread pool: the event loop keeps running meanwhile.
 * The file stays open (opening it for each sync cost main-thread time under load): SQLite
 * keeps the WAL file while the database is open, truncating or rewriting it in place.
 */
export function fileSyncer(): FileSync & { close(): Promise<void> } {
  const handles = new Map<string, Promise<fs.FileHandle>>();
  const sync = async (path: string) => {
    let opening = handles.get(path);
    if (!opening) {
      opening = fs.open(path, 'r');
      handles.set(path, opening);
      opening.catch(() => handles.delete(path));
    }
    let handle: fs.FileHandle;
    try {
      handle = await opening;
    } catch (err) {
      // No WAL file yet: nothing was ever written, so nothing waits to be made durable.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    await handle.datasync();
  };
  return Object.assign(sync, {
    close: async () => {
      const all = [...handles.values()];
      handles.clear();
      await Promise.all(all.map((h) => h.then((f) => f.close()).catch(() => {})));
    },
  });
}

/**
 * Group commit's second half for SQLite: commits run with `synchronous = NORMAL` (appended to
 * the write-ahead log, no fsync on the event loop: under load a synchronous fsync blocked every
 * request behind it, issue 14), and callers that must be durable before they answer (2xx,
 * 250) wait for `durable()`: an fdatasync of the WAL file in the thread pool that started after
 * their commit. One sync covers every commit made before it started, so concurrent callers
 * share it, and a caller with nothing new to cover returns at once.
 *
 * Why this is as durable as `synchronous = FULL`: in WAL mode a commit is the frames it
 * appends to the WAL; once they are on disk the commit survives power loss (SQLite itself
 * syncs the WAL before it checkpoints it into the database file, and the database after).
 * fsync covers the file, not the descriptor, so syncing our own descriptor of the WAL file
 * covers frames SQLite wrote through its own.
 */
export class WalSync {
  /** Bumped by every statement that may write (anything but a read), when it runs. */
  private written = 0;
  /** Every write counted up to this number is on disk. */
  private synced = 0;
  private inFlight: Promise<void> | null = null;
  private next: { promise: Promise<void>; upTo: number } | null = null;

  /** The syncer this instance opened (and closes); none when the caller brought its own. */
  private readonly owned: ReturnType<typeof fileSyncer> | null;
  private readonly sync: FileSync;

  constructor(
    private readonly walPath: string,
    sync?: FileSync,
  ) {
    this.owned = sync ? null : fileSyncer();
    this.sync = sync ?? this.owned!;
  }

  /** Waits for the last writes to be durable, then lets the file go. */
  async close(): Promise<void> {
    await this.durable();
    await this.owned?.close();
  }

  /** Called for each statement SQLite runs. */
  noteStatement(sqlText: string): void {
    if (/^\s*select\b/i.test(sqlText)) return;
    this.written++;
    const scope = writeScope.getStore();
    if (scope) scope.wrote = true;
  }

  /** Resolves once every write made so far is on disk. */
  durable(): Promise<void> {
    const upTo = this.written;
    if (this.synced >= upTo) return Promise.resolve();
    // A sync in flight may have started before these writes: wait for the one after it.
    if (!this.inFlight) return this.start(upTo);
    if (this.next) {
      this.next.upTo = Math.max(this.next.upTo, upTo);
      return this.next.promise;
    }
    const after = this.inFlight.then(
      () => this.start(this.next!.upTo, true),
      () => this.start(this.next!.upTo, true),
    );
    this.next = { promise: after, upTo };
    return after;
  }

  private start(upTo: number, fromQueue = false): Promise<void> {
    if (fromQueue) this.next = null;
    // Writes made before this point are covered by this sync.
    const covers = Math.max(upTo, this.written);
    const run = this.sync(this.walPath).then(() => {
      this.synced = Math.max(this.synced, covers);
    });
    this.inFlight = run;
    void run.then(
      () => {
        if (this.inFlight === run) this.inFlight = null;
      },
      () => {
        if (this.inFlight === run) this.inFlight = null;
      },
    );
    return run;
  }
}
