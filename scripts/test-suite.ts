// `npm test`: the whole suite but test/faults (those stop PostgreSQL and fill a disk: `npm run
// test:faults`, alone). Files that can share the machine run MAILSVC_TEST_CONCURRENCY (default
// 2) at a time; the files listed in SERIAL run one at a time after them. Every test picks free
// ports (port 0) and its own temp directory and database (a SQLite file in mkdtemp, or
// mailsvc_t_<pid>_<random> on PostgreSQL), so files do not meet; what is serial is there for
// what it measures or does to the machine, said beside each. Files named on the command line
// run alone, one at a time. Exits non-zero when either group failed. The files run from the
// test build (scripts/build-tests.ts: the same code, transpiled once instead of by tsx's loader in
// every process and thread); stack traces point into the sources through its source maps.
import { spawnSync } from 'node:child_process';
import { buildTests, builtPath } from './build-tests.js';
import { testFiles } from './test-files.js';

const SERIAL: Record<string, string> = {
  // Headless Chromium: processes of its own, the heaviest files of the suite.
  'test/e2e/dashboard.browser.test.ts': 'Chromium',
  'test/e2e/preferences.browser.test.ts': 'Chromium',
  'test/e2e/template-studio.browser.test.ts': 'Chromium',
  'test/e2e/team-sign-in.browser.test.ts': 'Chromium',
  'test/e2e/roles.browser.test.ts': 'Chromium',
  'test/e2e/oauth.browser.test.ts': 'Chromium',
  // Measure memory: RSS of worker threads, a heap-capped server importing 200,000 rows.
  'test/integration/delivery-threads.test.ts': 'measures RSS',
  'test/integration/contact-imports.test.ts': 'a heap-capped server (RSS bound)',
  'test/unit/shared/worker-pool.test.ts': 'measures memory',
  'test/integration/memory-soak.test.ts': 'a server inside a 512 MB cgroup under mixed load for 75 s',
  // Kill -9 child `mailsvc serve` processes, several nodes at once.
  'test/integration/crash-recovery.test.ts': 'kills a node',
  'test/integration/restart-leases.test.ts': 'kills a node',
  'test/integration/workflows-crash.test.ts': 'kills a node',
  'test/integration/workflows-cluster.test.ts': 'two nodes, kills one',
  'test/integration/cluster.test.ts': 'two nodes, 2,000 emails, kills one',
  'test/integration/cluster-imports.test.ts': 'two nodes, kills one',
  'test/integration/cli-terminal.test.ts': 'a terminal (pty), signals its children',
  'test/integration/cli.test.ts': 'signals its children',
  // A rate held over time on a clock three times faster than real time.
  'test/integration/delivery-sustained.test.ts': 'a sustained rate',
  // Mocked timers beside real-time turns of the event loop.
  'test/integration/smtp-greeting.test.ts': 'mocked timers',
};

function run(files: string[], concurrency: number): boolean {
  if (files.length === 0) return true;
  const result = spawnSync(
    process.execPath,
    ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, ...files.map(builtPath)],
    { stdio: 'inherit' },
  );
  return result.status === 0;
}

await buildTests();
const named = process.argv.slice(2);
if (named.length > 0) {
  process.exitCode = run(named, 1) ? 0 : 1;
} else {
  const files = testFiles('test');
  const missing = Object.keys(SERIAL).filter((f) => !files.includes(f));
  if (missing.length > 0) throw new Error(`scripts/test-suite.ts names files that are gone: ${missing.join(', ')}`);
  const concurrency = Number(process.env.MAILSVC_TEST_CONCURRENCY ?? 2);
  const together = run(
    files.filter((f) => !(f in SERIAL)),
    concurrency,
  );
  const alone = run(
    files.filter((f) => f in SERIAL),
    1,
  );
  process.exitCode = together && alone ? 0 : 1;
}
