import type { Command } from 'commander';
import { loadConfig, type Config } from '../config/load-config.js';
import type { Runtime } from '../runtime.js';
import { createLogger } from '../shared/logger.js';
import { createProgress, type Progress } from './progress.js';

/** Where a command writes; tests pass buffers, `bin/mailsvc.js` passes the process streams. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** stderr is a terminal: progress is redrawn in place rather than written as lines. */
  stderrIsTTY?: boolean;
  /** stdout is a terminal: `serve` logs pretty lines rather than JSON (log.format auto). */
  stdoutIsTTY?: boolean;
  /** stdin is a terminal: `init` asks its questions. */
  stdinIsTTY?: boolean;
  /** Reads one line typed at the terminal (`init`'s questions); absent when nothing can be asked. */
  ask?: (question: string) => Promise<string>;
  columns?: number | undefined;
}

/** Ends a command with an exit code after it has printed what it had to say. */
export class CliExit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

interface GlobalOptions {
  config?: string;
  json?: boolean;
}

export const globals = (cmd: Command): GlobalOptions => cmd.optsWithGlobals<GlobalOptions>();

export const configOf = (cmd: Command, io: CliIo, overrides?: unknown): Config =>
  loadConfig({ file: globals(cmd).config, env: io.env, overrides });

/**
 * Runs a command body against an opened runtime (migrated store and services). Logs go to
 * stderr at warn level so that stdout carries only the command's output.
 */
export async function withRuntime<T>(cmd: Command, io: CliIo, body: (runtime: Runtime) => Promise<T>): Promise<T> {
  const config = configOf(cmd, io);
  const logger = createLogger(config.log.level === 'silent' ? 'silent' : 'warn', {
    write: (s: string) => io.stderr(s),
  });
  // The services load with the first command that needs them, not with --help or --version.
  const { openRuntime } = await import('../runtime.js');
  const runtime = await openRuntime(config, { logger });
  try {
    return await body(runtime);
  } finally {
    await runtime.close();
  }
}

/** Prints `data` as JSON with --json, otherwise the human text. */
export function output(cmd: Command, io: CliIo, data: unknown, text: () => string): void {
  if (globals(cmd).json) io.stdout(JSON.stringify(data, null, 2) + '\n');
  else io.stdout(text() + '\n');
}

/** Aligned columns for list output. */
export function table(rows: string[][]): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '))
    .join('\n');
}

/** The workspace a command acts on: --workspace, or the default one. */
export async function workspaceOf(runtime: Runtime, id: string | undefined): Promise<string> {
  return id ? (await runtime.services.workspaces.get(id)).id : (await runtime.services.workspaces.ensureDefault()).id;
}

/** Progress of long work, on stderr: a redrawn bar on a terminal, plain lines otherwise. */
export const progressOn = (io: CliIo, label: string, total: number | null, unit?: string): Progress =>
  createProgress({
    label,
    total,
    unit,
    sink: { write: (text) => io.stderr(text), isTTY: io.stderrIsTTY === true, columns: io.columns },
  });
