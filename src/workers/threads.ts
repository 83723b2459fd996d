import { Worker } from 'node:worker_threads';
import { resourceLimits, type IsolateSize } from '../shared/isolate-memory.js';
import type { Logger } from '../shared/logger.js';

/**
 * Worker threads that run jobs of the kernel off the main event loop (delivery), supervised:
 * a thread that dies (an uncaught error, out of memory, terminated) is reported with the lease
 * owner it used, so its claims can be given back at once, and a new one takes its place.
 * Messages both ways are plain objects; what they mean is the caller's.
 */

export interface ThreadMessage {
  type: string;
  [field: string]: unknown;
}

export interface Threads {
  /** Sends a message to every running thread. */
  broadcast(message: ThreadMessage): void;
  /** The running threads' lease owners (as each announced with a `ready` message). */
  owners(): string[];
  /** Terminates thread `index` as a crash would (tests). */
  kill(index: number): Promise<void>;
  /** Asks every thread to stop (`{type: 'stop'}`) and waits until they have exited. */
  stop(): Promise<void>;
}

interface ThreadsOptions {
  /** The module the threads run (a file URL). */
  entry: URL;
  count: number;
  /** Passed to each thread as workerData (structured-cloned). */
  data: unknown;
  /** Each thread's V8 heap (V8's defaults without one). */
  size?: IsolateSize | undefined;
  logger: Logger;
  onMessage(message: ThreadMessage, index: number): void;
  /** A thread died; `owner` is the lease owner it announced (null before it did). Runs before its replacement starts. */
  onCrash(owner: string | null, index: number): Promise<void>;
}

/** How long a stopping thread may take before it is terminated. */
const STOP_TIMEOUT_MS = 60_000;
/** A thread that dies this soon after it started is restarted after a pause, not at once. */
const RESTART_PAUSE_MS = 1000;

/** Run from the TypeScript sources (tests, under tsx) rather than the build. */
const fromSource = (entry: URL): boolean => entry.pathname.endsWith('.ts');

/**
 * A thread of TypeScript sources registers tsx itself: on Node 20 a worker does not apply the
 * parent's `--import tsx`. Only the tests run this way; the product runs its build.
 */
const tsxBootstrap = (entry: URL): string => {
  const api = import.meta.resolve('tsx/esm/api');
  return `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`;
};

export function startThreads(options: ThreadsOptions): Threads {
  const log = options.logger.child({ component: 'threads' });
  let stopping = false;

  interface Slot {
    worker: Worker;
    owner: string | null;
    exited: Promise<void>;
    startedAt: number;
  }

  const slots: Slot[] = [];
  const limits = resourceLimits(options.size);

  const spawn = (index: number): Slot => {
    const common = { workerData: options.data, ...(limits ? { resourceLimits: limits } : {}) };
    const worker = fromSource(options.entry)
      ? new Worker(tsxBootstrap(options.entry), { eval: true, ...common })
      : new Worker(options.entry, common);
    const slot: Slot = { worker, owner: null, exited: Promise.resolve(), startedAt: Date.now() };
    worker.on('message', (message: ThreadMessage) => {
      if (message.type === 'ready' && typeof message.owner === 'string') slot.owner = message.owner;
      options.onMessage(message, index);
    });
    worker.on('error', (err) => log.error({ err, thread: index }, 'worker thread failed'));
    slot.exited = new Promise<void>((resolve) =>
      worker.once('exit', (code) => {
        resolve();
        if (stopping) return;
        log.error(
          { thread: index, code, owner: slot.owner },
          'worker thread exited: giving back its claims and starting another',
        );
        void (async () => {
          try {
            await options.onCrash(slot.owner, index);
          } catch (err) {
            log.error({ err, thread: index }, 'could not give back the claims of a dead thread (their leases run out)');
          }
          if (Date.now() - slot.startedAt < RESTART_PAUSE_MS)
            await new Promise((r) => setTimeout(r, RESTART_PAUSE_MS).unref());
          if (!stopping) slots[index] = spawn(index);
        })();
      }),
    );
    return slot;
  };

  for (let i = 0; i < options.count; i++) slots.push(spawn(i));

  return {
    broadcast(message) {
      for (const s of slots) s.worker.postMessage(message);
    },
    owners: () => slots.flatMap((s) => (s.owner ? [s.owner] : [])),
    async kill(index) {
      await slots[index]?.worker.terminate();
    },
    async stop() {
      stopping = true;
      await Promise.all(
        slots.map(async (s) => {
          s.worker.postMessage({ type: 'stop' });
          const timer = setTimeout(() => void s.worker.terminate(), STOP_TIMEOUT_MS);
          await s.exited;
          clearTimeout(timer);
        }),
      );
    },
  };
}
