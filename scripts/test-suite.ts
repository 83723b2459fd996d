// `npm test`: the whole suite but test/faults (those stop PostgreSQL and fill a disk: `npm run
// test:faults`, alone). Every test picks free ports (port 0) and its own temp directory and
// database (a SQLite file in mkdtemp, or mailsvc_t_<pid>_<random> on PostgreSQL), so files do not
// meet; each file runs in a process of its own, MAILSVC_TEST_CONCURRENCY (default 2) at a time.
// What may not share the machine freely is named below with the reason: a HEAVY file runs beside
// ordinary files but never beside another heavy one; an ALONE file runs after all the others,
// with nothing beside it. Files named on the command line run one at a time.
//
// The files run from the test build (scripts/build-tests.ts: the same code, transpiled once
// instead of by tsx's loader in every process and thread); stack traces point into the sources
// through its source maps. A passing file prints one line, a failing one its whole TAP output;
// the end prints the totals and the slowest files. Exits non-zero when any file failed.
import { spawn } from 'node:child_process';
import { buildTests, builtPath } from './build-tests.js';
import { testFiles } from './test-files.js';

const HEAVY: Record<string, string> = {
  // Headless Chromium: processes of its own, the heaviest files of the suite.
  'test/e2e/dashboard.browser.test.ts': 'Chromium',
  'test/e2e/preferences.browser.test.ts': 'Chromium',
  'test/e2e/template-studio.browser.test.ts': 'Chromium',
  'test/e2e/team-sign-in.browser.test.ts': 'Chromium',
  'test/e2e/roles.browser.test.ts': 'Chromium',
  'test/e2e/oauth.browser.test.ts': 'Chromium',
  // Several `mailsvc serve` processes at once, killed with -9 and restarted.
  'test/integration/crash-recovery.test.ts': 'kills a node',
  'test/integration/restart-leases.test.ts': 'kills a node',
  'test/integration/workflows-crash.test.ts': 'kills a node',
  'test/integration/workflows-cluster.test.ts': 'two nodes, kills one',
  'test/integration/cluster.test.ts': 'two nodes, 2,000 emails, kills one',
  'test/integration/cluster-imports.test.ts': 'two nodes, kills one',
  // Dozens of CLI processes, each loading the program.
  'test/integration/cli.test.ts': 'a CLI process per step',
  'test/integration/cli-terminal.test.ts': 'a terminal (pty), signals its children',
  // Memory measured against bounds: RSS of worker threads, a heap-capped server importing 200,000 rows.
  'test/integration/delivery-threads.test.ts': 'measures RSS',
  'test/integration/contact-imports.test.ts': 'a heap-capped server (RSS bound)',
  'test/unit/shared/worker-pool.test.ts': 'measures memory',
  'test/integration/memory-soak.test.ts': 'a server inside a 512 MB cgroup under mixed load for 75 s',
  // A rate held over time on a clock three times faster than real time (set under what a
  // two-core machine at load 25 delivers: a neighbour slows it, a second heavy file may not).
  'test/integration/delivery-sustained.test.ts': 'a sustained rate',
};

const ALONE: Record<string, string> = {
  // Mocked timers beside real-time turns of the event loop: the greeting must come within 2 s.
  'test/integration/smtp-greeting.test.ts': 'mocked timers',
};

/** A file that has not finished within this is killed and counted as failed (a hang, not a slow machine). */
const FILE_TIMEOUT_MS = Number(process.env.MAILSVC_TEST_FILE_TIMEOUT_S ?? 1200) * 1000;

const COUNTS = ['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo'] as const;
type Counts = Record<(typeof COUNTS)[number], number>;

interface FileResult {
  file: string;
  ok: boolean;
  seconds: number;
  counts: Counts;
}

const running = new Set<number>();

function runFile(file: string): Promise<FileResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    // A process group of its own, so that a hung file is killed with every process it started.
    const child = spawn(process.execPath, ['--enable-source-maps', '--test', '--test-reporter=tap', builtPath(file)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running.add(child.pid!);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\n# test-suite: killed after ${FILE_TIMEOUT_MS / 1000} s\n`;
      kill(child.pid!);
    }, FILE_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child.pid!);
      const counts = Object.fromEntries(
        COUNTS.map((name) => [name, Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(output)?.[1] ?? 0)]),
      ) as Counts;
      const ok = code === 0 && counts.fail === 0 && counts.cancelled === 0;
      const seconds = (Date.now() - started) / 1000;
      if (!ok) process.stdout.write(`${output}\n`);
      process.stdout.write(
        `${ok ? 'ok  ' : 'FAIL'} ${seconds.toFixed(1).padStart(6)}s ${file} (${counts.pass}/${counts.tests} passed` +
          `${counts.skipped ? `, ${counts.skipped} skipped` : ''}${ok ? '' : `, exit ${signal ?? code}`})\n`,
      );
      resolve({ file, ok, seconds, counts });
    });
  });
}

function kill(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const pid of running) kill(pid);
    process.exit(130);
  });
}

/**
 * Runs `files` `slots` at a time, never two heavy files at once: a freed slot takes the next
 * heavy file when none runs, else the next ordinary one (heavy files are the long ones, so they
 * start early and ordinary files fill the other slot around them).
 */
async function runPool(files: string[], slots: number): Promise<FileResult[]> {
  const heavy = files.filter((f) => f in HEAVY);
  const ordinary = files.filter((f) => !(f in HEAVY));
  const results: FileResult[] = [];
  let heavyRunning = false;
  let active = 0;
  await new Promise<void>((done) => {
    const next = () => {
      while (active < slots) {
        const takeHeavy = !heavyRunning && heavy.length > 0;
        const file = takeHeavy ? heavy.shift() : ordinary.shift();
        if (file === undefined) break;
        active++;
        if (takeHeavy) heavyRunning = true;
        void runFile(file).then((result) => {
          results.push(result);
          active--;
          if (takeHeavy) heavyRunning = false;
          next();
        });
      }
      if (active === 0 && heavy.length === 0 && ordinary.length === 0) done();
    };
    next();
  });
  return results;
}

function report(results: FileResult[], seconds: number): boolean {
  const total = Object.fromEntries(
    COUNTS.map((name) => [name, results.reduce((sum, r) => sum + r.counts[name], 0)]),
  ) as Counts;
  const failed = results.filter((r) => !r.ok);
  console.log(
    `\n# ${results.length} files in ${(seconds / 60).toFixed(1)} min: ${COUNTS.map((n) => `${total[n]} ${n}`).join(', ')}`,
  );
  console.log(
    `# slowest: ${[...results]
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, 8)
      .map((r) => `${r.file.replace(/^test\//, '')} ${r.seconds.toFixed(0)} s`)
      .join(', ')}`,
  );
  if (failed.length > 0) console.log(`# FAILED: ${failed.map((r) => r.file).join(', ')}`);
  return failed.length === 0 && total.tests > 0;
}

await buildTests();
const started = Date.now();
const named = process.argv.slice(2);
const results: FileResult[] = [];
if (named.length > 0) {
  for (const file of named) results.push(await runFile(file));
} else {
  const files = testFiles('test');
  const missing = [...Object.keys(HEAVY), ...Object.keys(ALONE)].filter((f) => !files.includes(f));
  if (missing.length > 0) throw new Error(`scripts/test-suite.ts names files that are gone: ${missing.join(', ')}`);
  const concurrency = Number(process.env.MAILSVC_TEST_CONCURRENCY ?? 2);
  results.push(
    ...(await runPool(
      files.filter((f) => !(f in ALONE)),
      concurrency,
    )),
  );
  for (const file of files.filter((f) => f in ALONE)) results.push(await runFile(file));
}
process.exitCode = report(results, (Date.now() - started) / 1000) ? 0 : 1;
