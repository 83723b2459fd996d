import { spawn, type ChildProcess } from 'node:child_process';
import { distIsFresh } from '../../scripts/dist-fresh.js';
import { launchEnv, launchFlags } from '../../scripts/launch-flags.js';
import { repoPath, repoRoot } from '../../scripts/repo-root.js';

const root = repoRoot;

/**
 * How a child `mailsvc` starts: the compiled CLI when dist/ is newer than every source file
 * (`npm test` builds it first: a compiled start takes a third of the time tsx takes to load
 * the sources, and the suite starts hundreds), else the sources through tsx, so that a test
 * run on its own after an edit still runs what was edited. Decided once per test process.
 * Either way with the Node.js options the shipped launcher sets (scripts/launch-flags.ts).
 */
let command: string[] | undefined;
export const cliCommand = (): string[] =>
  (command ??= [
    ...launchFlags(root),
    ...(distIsFresh(root) ? [repoPath('bin/mailsvc.js')] : ['--import', 'tsx', repoPath('src/cli/bin.ts')]),
  ]);

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `mailsvc` CLI in a child process (compiled, or from source through tsx). */
export function spawnCli(args: string[], env: Record<string, string>, cwd = root): ChildProcess {
  return spawn(process.execPath, [...cliCommand(), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...launchEnv(root), ...env },
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

export interface Served {
  child: ChildProcess;
  /** The HTTP API's address. */
  url: string;
  /** The submission port with STARTTLS (plain AUTH is allowed on loopback); throws when the listener is off. */
  readonly smtpPort: number;
  /** Resolves with the exit code once the process is gone (-1 when a signal ended it). */
  exited: Promise<number | null>;
  alive(): boolean;
  /** Everything it wrote: its log (stdout) and the CLI's lines (stderr). */
  output(): string;
  /** SIGTERM, then SIGKILL after 20 s; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** kill -9, as a crash would; resolves once the process is gone. */
  kill(): Promise<void>;
}

/**
 * Starts `mailsvc serve` in a child process, as an operator runs it; resolves once the HTTP API
 * listens (the CLI prints its address). The one helper the tests start, stop and kill servers with.
 */
export async function serveCli(env: Record<string, string>, onSpawn?: (child: ChildProcess) => void): Promise<Served> {
  const child = spawnCli(['serve'], env);
  // E.g. into a memory cgroup, before the program has loaded.
  onSpawn?.(child);
  let out = '';
  let running = true;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      running = false;
      resolve(code ?? (signal ? -1 : null));
    }),
  );
  child.stdout!.on('data', (d) => (out += d));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      out += d;
      const m = /HTTP API on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${out.slice(-2000)}`)));
  });
  return {
    child,
    url,
    get smtpPort() {
      // Printed in the same turn as the HTTP address, after it.
      const m = /SMTP submission with STARTTLS on \S+:(\d+)/.exec(out);
      if (!m) throw new Error(`the submission listener is not running: ${out.slice(-500)}`);
      return Number(m[1]);
    },
    exited,
    alive: () => running,
    output: () => out,
    async stop() {
      if (!running) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    async kill() {
      if (!running) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
