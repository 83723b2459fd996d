import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInThisContext } from 'node:vm';
import type { ResourceLimits } from 'node:worker_threads';

/**
 * What one V8 isolate (the main thread, a delivery thread, a signing thread) holds, from inside
 * it: Node 20 cannot ask a worker's heap from outside (`worker.getHeapStatistics()` came in
 * 22.16), so each thread measures itself and reports. `rss` is the process's, whichever thread
 * asks; what is left of it beyond the isolates' heaps and external memory is native (SQLite's
 * page cache, TLS, libuv, malloc's slack, code).
 */
export interface IsolateMemory {
  /** V8 heap reserved (young and old generations, code, large objects). */
  heapTotal: number;
  heapUsed: number;
  /** The young generation's semi-spaces as reserved now: what V8 flags size (`maxYoungGenerationSizeMb`). */
  young: number;
  /** Memory V8 objects hold outside the heap (Buffers and ArrayBuffers among it). */
  external: number;
  arrayBuffers: number;
  /** The heap limit this isolate runs under (`resourceLimits`, --max-old-space-size). */
  heapLimit: number;
}

/**
 * The probe as CommonJS source `(require) => () => IsolateMemory`, so that a pool thread
 * (shared/worker-pool.ts) runs the very same code as this thread.
 */
export const MEMORY_PROBE = `(require) => {
  const v8 = require('node:v8');
  return () => {
    const m = process.memoryUsage();
    const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    return { heapTotal: m.heapTotal, heapUsed: m.heapUsed, young: young ? young.space_size : 0, external: m.external, arrayBuffers: m.arrayBuffers, heapLimit: v8.getHeapStatistics().heap_size_limit };
  };
}`;

/** This isolate's memory, now. */
export const isolateMemory: () => IsolateMemory = runInThisContext(`(${MEMORY_PROBE})`, {
  filename: 'isolate-memory.cjs',
})(createRequire(import.meta.url));

/** How large a worker thread's isolate may grow (`delivery.threadMemory`, `delivery.signingThreadMemory`). */
export interface IsolateSize {
  youngGenerationMb: number;
  heapMb: number;
}

/**
 * The Worker option for `size` (V8's defaults without one). V8 lets its command-line sizes
 * (`--max-semi-space-size` on the launcher's line, bin/mailsvc.js, which sizes the main
 * isolate) override a worker's own limits; they are read when an isolate is made, so clearing
 * them once the main isolate is made leaves it as it is and lets each worker have its size.
 */
export function resourceLimits(size: IsolateSize | undefined): ResourceLimits | undefined {
  if (!size) return undefined;
  setFlagsFromString('--max-semi-space-size=0');
  setFlagsFromString('--max-old-space-size=0');
  return { maxYoungGenerationSizeMb: size.youngGenerationMb, maxOldGenerationSizeMb: size.heapMb };
}
