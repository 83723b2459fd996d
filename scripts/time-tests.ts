// Profiles the suite one file at a time: wall, user and system seconds per file (the CPU
// figures stay meaningful when other work loads the machine; wall does not), then prints the
// slowest files. `node --import tsx scripts/time-tests.ts [--top N] [--out file.json] [files…]`;
// MAILSVC_TEST_POSTGRES set profiles the PostgreSQL suite.
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { buildTests, builtPath } from './build-tests.js';
import { distIsFresh } from './dist-fresh.js';
import { testFiles } from './test-files.js';

interface FileTime {
  file: string;
  wall: number;
  user: number;
  sys: number;
  tests: number;
  ok: boolean;
  /** The end of a failed file's TAP output (kept in --out). */
  output?: string;
}

function timeFile(file: string): Promise<FileTime> {
  return new Promise((resolve) => {
    const child = spawn(
      '/usr/bin/time',
      ['-f', 'TIME %e %U %S', process.execPath, '--enable-source-maps', '--test', builtPath(file)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('close', (code) => {
      const match = /TIME ([\d.]+) ([\d.]+) ([\d.]+)\s*$/.exec(err);
      const tests = /^# tests (\d+)/m.exec(out);
      resolve({
        file,
        wall: Number(match?.[1] ?? NaN),
        user: Number(match?.[2] ?? NaN),
        sys: Number(match?.[3] ?? NaN),
        tests: Number(tests?.[1] ?? 0),
        ok: code === 0,
        ...(code === 0 ? {} : { output: out.slice(-20_000) }),
      });
    });
  });
}

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at < 0 ? undefined : args.splice(at, 2)[1];
};
const top = Number(option('--top') ?? 20);
const outFile = option('--out');
const files = args.length > 0 ? args : testFiles('test');
// The CLI tests start the compiled CLI only when dist/ is fresh (else through tsx, three times
// slower to start): profile what npm test runs.
if (!distIsFresh('.')) {
  console.error('time-tests: dist/ is stale; building it first (npm run build)');
  execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
}
await buildTests();
const database = process.env.MAILSVC_TEST_POSTGRES ? 'postgres' : 'sqlite';
const started = Date.now();
const times: FileTime[] = [];
for (const file of files) {
  const time = await timeFile(file);
  times.push(time);
  const load = loadavg()[0]!.toFixed(2);
  console.error(
    `${time.ok ? 'ok  ' : 'FAIL'} ${time.wall.toFixed(1).padStart(6)}s wall ${(time.user + time.sys).toFixed(1).padStart(6)}s cpu load ${load} ${file}`,
  );
  if (outFile) writeFileSync(outFile, JSON.stringify({ database, times }, null, 1));
}
const total = (Date.now() - started) / 1000;
const cpu = times.reduce((sum, t) => sum + t.user + t.sys, 0);
console.log(
  `${database}: ${files.length} files, ${total.toFixed(0)} s wall, ${cpu.toFixed(0)} s cpu (user+sys), load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log('| file | tests | wall s | cpu s | ok |');
console.log('|---|---:|---:|---:|---|');
for (const t of [...times].sort((a, b) => b.wall - a.wall).slice(0, top)) {
  console.log(
    `| ${t.file} | ${t.tests} | ${t.wall.toFixed(1)} | ${(t.user + t.sys).toFixed(1)} | ${t.ok ? 'ok' : 'FAIL'} |`,
  );
}
const failed = times.filter((t) => !t.ok);
if (failed.length > 0) console.log(`failed: ${failed.map((t) => t.file).join(', ')}`);
