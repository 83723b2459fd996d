import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { distIsFresh } from '../../scripts/dist-fresh.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * How a child `mailsvc` starts: the compiled CLI when dist/ is newer than every source file
 * (`npm test` builds it first: a compiled start takes a third of the time tsx takes to load
 * the sources, and the suite starts hundreds), else the sources through tsx, so that a test
 * run on its own after an edit still runs what was edited. Decided once per test process.
 */
let command: string[] | undefined;
const cliCommand = (): string[] =>
  (command ??= distIsFresh(root) ? [fileURLToPath(new URL('../../bin/mailsvc.js', import.meta.url))] : ['--import', 'tsx', fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url))]);

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `mailsvc` CLI in a child process (compiled, or from source through tsx). */
export function spawnCli(args: string[], env: Record<string, string>, cwd = root): ChildProcess {
  return spawn(process.execPath, [...cliCommand(), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function runCliProcess(args: string[], env: Record<string, string>, cwd?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env, cwd);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts `mailsvc serve` in a child process; resolves with its HTTP address once it listens. */
export async function serveCli(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawnCli(['serve'], env);
  const url = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d) => {
      err += d;
      const m = /HTTP API on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { child, url };
}
