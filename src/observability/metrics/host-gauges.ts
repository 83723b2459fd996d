import { readFileSync } from 'node:fs';
import { Gauge, type Registry } from 'prom-client';
import type { IsolateMemory } from '../../shared/isolate-memory.js';
import { oncePerScrape, type MetricSources, type StorageSample, type ThreadMemorySample } from './sources.js';

export function defineStorageGauges(registry: Registry, sources: MetricSources): void {
  const storageGauge = (name: string, help: string, value: (s: StorageSample) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['path'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const s of sources.storage?.() ?? []) this.set({ path: s.path }, value(s));
      },
    });
  storageGauge(
    'mailsvc_storage_free_bytes',
    "Free bytes on each file system the server writes to (the SQLite database's, dataDir)",
    (s) => s.freeBytes,
  );
  storageGauge(
    'mailsvc_storage_min_free_bytes',
    'The reserve (storage.minFreeBytes) below which new mail is refused, per file system',
    (s) => s.minFreeBytes,
  );
}

const THREAD_KINDS: Record<string, keyof IsolateMemory> = {
  heap_used: 'heapUsed',
  heap_total: 'heapTotal',
  heap_young: 'young',
  heap_limit: 'heapLimit',
  external: 'external',
  array_buffers: 'arrayBuffers',
};

/**
 * Memory the way it is spent: each isolate's heap (and young generation) and external memory,
 * and what the process holds beyond them (native: SQLite's page cache, TLS, malloc).
 */
export function defineMemoryGauges(registry: Registry, sources: MetricSources): void {
  const memorySamples = oncePerScrape(() =>
    Promise.all(sources.memory.map((read) => read().catch((): ThreadMemorySample[] => []))).then((lists) =>
      lists.flat(),
    ),
  );
  new Gauge({
    name: 'mailsvc_thread_memory_bytes',
    help: "Memory of each thread's V8 isolate (main, main-pool-N, delivery-N, delivery-N-pool-N), by kind: heap_total, heap_used, heap_young (the young generation as reserved), heap_limit, external (Buffers and other memory outside the heap), array_buffers",
    labelNames: ['thread', 'kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await memorySamples())
        for (const [kind, field] of Object.entries(THREAD_KINDS)) this.set({ thread: s.thread, kind }, s.memory[field]);
    },
  });
  new Gauge({
    name: 'mailsvc_process_memory_bytes',
    help: "Memory of the whole process, by kind: rss, peak_rss (VmHWM, Linux), native (rss beyond every isolate's heap and external memory: SQLite's page cache, TLS, malloc's slack, code)",
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const rss = process.memoryUsage.rss();
      const isolates = (await memorySamples()).reduce((sum, s) => sum + s.memory.heapTotal + s.memory.external, 0);
      this.set({ kind: 'rss' }, rss);
      this.set({ kind: 'native' }, Math.max(0, rss - isolates));
      const peak = peakRss();
      if (peak !== null) this.set({ kind: 'peak_rss' }, peak);
    },
  });
}

/** Large request bodies (http.bodyMemory): waiting bodies that stay are a budget too small for the traffic. */
export function defineBodyGauges(registry: Registry, sources: MetricSources): void {
  new Gauge({
    name: 'mailsvc_http_body_memory_bytes',
    help: 'Bytes of large messages (1 MB and over: API request bodies, SMTP submissions) being handled now, within http.bodyMemory',
    registers: [registry],
    collect() {
      this.set(sources.bodies?.().held ?? 0);
    },
  });
  new Gauge({
    name: 'mailsvc_http_bodies_waiting',
    help: 'Large messages waiting for room in http.bodyMemory (API bodies before they are read, SMTP submissions once read)',
    registers: [registry],
    collect() {
      this.set(sources.bodies?.().waiting ?? 0);
    },
  });
}

/** The process's peak resident memory (VmHWM), in bytes; null where /proc is not there. */
function peakRss(): number | null {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : null;
  } catch {
    return null;
  }
}
