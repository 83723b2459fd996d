#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=16 --max-old-space-size=384
// Runs the compiled CLI; `npm install` builds dist/ through the `prepare` script.
// The options on the first line size the main thread's V8 heap (the worker threads have their
// own sizes, delivery.threadMemory and delivery.signingThreadMemory). V8 reads them only when
// the process starts, so they are here; config/mailsvc.service runs this file, and the tests
// and benches start the program with the same options (scripts/launch-flags.ts).
// - young generation: from Node.js 22 on V8 lets it grow to 128 MB (Node.js 20 stopped at 32),
//   and a busy server keeps it resident (a 200,000-row contact import: 150 MB more on Node.js
//   24, under 64 on 20).
// - old generation: V8 lets a heap grow to 4 times what it held after a collection when its
//   limit is 2 GB or more (what it picks on a machine with 8 GB or more), to 1.3 times at 256
//   MB, and in between in proportion; on the machines of the issue the main heap reached
//   160-175 MB for 45 MB live. 384 MB grows it 1.35 times and still leaves room for
//   http.bodyMemory's large bodies (16 MB of JSON by default: about 40 MB of heap, 160 at 64
//   MB) above what the server holds (about 50 MB). Past it V8 ends the process: everything answered is on disk.
// - MALLOC_ARENA_MAX=2: glibc gives each thread that allocates (the worker threads, libuv's
//   pool, V8's helpers) a heap of its own, up to 8 per core, and keeps what was freed in each;
//   two hold 20 MB less under load, at no measured cost (docs/performance.md).
// - MALLOC_MMAP_THRESHOLD_=131072: glibc maps allocations of 128 KB and more (the Buffers of
//   large messages) on their own and unmaps them when freed, as it does at start; left to
//   itself it raises that threshold to 32 MB after the first large free, and from then on keeps
//   those Buffers' memory in its heaps: after one round of 7 MB messages the server held 150 MB
//   more for the rest of its life (docs/performance.md).

// Node.js 22.1 and later keep V8's compiled code of every module on disk (in the temp directory;
// NODE_COMPILE_CACHE names another), so a CLI command or a restart does not compile the whole
// program again: a third less CPU for `mailsvc keys list` on Node.js 24. Node.js 20 has no cache.
import module from 'node:module';
module.enableCompileCache?.();
await import('../dist/src/cli/bin.js');
