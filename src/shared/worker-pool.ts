import { createRequire } from 'node:module';
import { runInThisContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { MEMORY_PROBE, resourceLimits, type IsolateMemory, type IsolateSize } from './isolate-memory.js';

/**
 * CPU-bound work that would otherwise hold the event loop (DKIM signing, MIME composition) runs
 * on a few worker threads shared by every kind of task, so the threads stay busy without one
 * pool per kind (each thread costs a V8 heap and the libraries it loads).
 *
 * A task is CommonJS source for a factory `(require) => async (request) => result`, evaluated
 * in the worker, or on the calling thread when the pool has no threads, so both run the very
 * same code, from the TypeScript sources (tests) as from dist. A task's factory runs on its
 * first request in each thread: a thread loads only the libraries of the work it is given.
 */
interface TaskResult {
  value: unknown;
  /** Buffers moved (not copied) back to the caller. */
  transfer?: ArrayBuffer[];
}

export interface WorkerPool {
  /** Runs `task` with `request` (structured-cloned; `transfer` is moved); rejects with the task's error. */
  run<T>(task: string, request: unknown, transfer?: ArrayBuffer[]): Promise<T>;
  /** What each running thread's isolate holds (none before the first task, or with no threads; threads start as tasks need them): for /metrics. */
  memory(): Promise<IsolateMemory[]>;
  close(): Promise<void>;
}

type Reply = { id: number; value: unknown } | { id: number; error: string };

const requireHere = createRequire(import.meta.url);

const workerSource = (tasks: Record<string, string>): string => `
const { parentPort } = require('node:worker_threads');
const factories = { ${Object.entries(tasks)
  .map(([name, source]) => `${JSON.stringify(name)}: ${source}`)
  .join(',\n')} };
const ready = new Map();
const memory = (${MEMORY_PROBE})(require);
parentPort.on('message', async ({ id, task, request }) => {
  if (task === undefined) return parentPort.postMessage({ id, value: memory() });
  try {
    let run = ready.get(task);
    if (!run) ready.set(task, (run = factories[task](require)));
    const { value, transfer } = await run(request);
    parentPort.postMessage({ id, value }, transfer || []);
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

/** Runs the tasks on the calling thread: for `threads: 0` (tests, the CLI). */
function inlinePool(tasks: Record<string, string>): WorkerPool {
  const ready = new Map<string, (request: unknown) => Promise<TaskResult>>();
  return {
    async run<T>(task: string, request: unknown): Promise<T> {
      let run = ready.get(task);
      if (!run) ready.set(task, (run = runInThisContext(`(${tasks[task]})`, { filename: `${task}.cjs` })(requireHere)));
      return (await run!(request)).value as T;
    },
    memory: async () => [],
    close: async () => {},
  };
}

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve(value: unknown): void; reject(err: Error): void }>;
}

export function createWorkerPool(options: {
  threads: number;
  tasks: Record<string, string>;
  size?: IsolateSize | undefined;
}): WorkerPool {
  const { threads, tasks } = options;
  const limits = resourceLimits(options.size);
  if (threads <= 0) return inlinePool(tasks);
  const source = workerSource(tasks);
  let nextId = 1;
  let closing = false;

  const spawn = (): Slot => {
    const slot: Slot = {
      worker: new Worker(source, { eval: true, ...(limits ? { resourceLimits: limits } : {}) }),
      pending: new Map(),
    };
    slot.worker.unref();
    slot.worker.on('message', (reply: Reply) => {
      const waiter = slot.pending.get(reply.id);
      if (!waiter) return;
      slot.pending.delete(reply.id);
      if ('error' in reply) waiter.reject(new Error(reply.error));
      else waiter.resolve(reply.value);
    });
    const fail = (err: Error) => {
      for (const waiter of slot.pending.values()) waiter.reject(err);
      slot.pending.clear();
      const index = slots.indexOf(slot);
      // A dead thread is replaced; its tasks were failed, and their callers retry.
      if (index >= 0 && !closing) slots[index] = spawn();
    };
    slot.worker.on('error', (err) => fail(err));
    slot.worker.on('exit', (code) => {
      if (!closing) fail(new Error(`worker thread exited with code ${code}`));
    });
    return slot;
  };
  // Threads start as tasks need them: a process that never needs one spawns none, and one that
  // composes a message now and then (a campaign's preview on the main thread) spawns one, not
  // a thread per core (each is an isolate: 15-30 MB).
  const slots: Slot[] = [];

  return {
    run<T>(task: string, request: unknown, transfer: ArrayBuffer[] = []): Promise<T> {
      if (closing) return Promise.reject(new Error('worker pool is closed'));
      if (!(task in tasks)) return Promise.reject(new Error(`unknown task ${task}`));
      // The least busy thread takes it; another starts when every one is busy.
      let slot = slots.reduce<Slot | null>((a, b) => (a && a.pending.size <= b.pending.size ? a : b), null);
      if (!slot || (slot.pending.size > 0 && slots.length < threads)) slots.push((slot = spawn()));
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        slot.pending.set(id, { resolve, reject });
        slot.worker.postMessage({ id, task, request }, transfer);
      });
    },
    memory() {
      // A message without a task asks the thread for its memory; it queues behind the thread's tasks.
      return Promise.all(
        slots.map(
          (slot) =>
            new Promise<IsolateMemory>((resolve, reject) => {
              const id = nextId++;
              slot.pending.set(id, { resolve, reject });
              slot.worker.postMessage({ id });
            }),
        ),
      );
    },
    async close() {
      closing = true;
      await Promise.all(slots.map((s) => s.worker.terminate()));
      for (const s of slots) for (const waiter of s.pending.values()) waiter.reject(new Error('worker pool closed'));
    },
  };
}
