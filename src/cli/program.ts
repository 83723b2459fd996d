import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/load-config.js';
import { isAppError } from '../shared/errors.js';
import { registerCredentialCommands } from './credentials.js';
import { registerDashboardCommands } from './dashboard.js';
import { registerDbCommands } from './db.js';
import { registerDoctorCommands } from './doctor.js';
import { registerDomainCommands } from './domains.js';
import { CliExit, type CliIo } from './io.js';
import { registerQueueCommands } from './queue.js';
import { registerReputationCommands } from './reputation.js';
import { registerRouteCommands } from './routes.js';
import { registerServerCommands } from './server.js';
import { registerTemplateCommands } from './templates.js';
import { registerSuppressionCommands } from './suppressions.js';
import { registerWorkflowCommands } from './workflows.js';
import { registerWorkspaceCommands } from './workspaces.js';

export function buildProgram(io: CliIo): Command {
  const program = new Command('mailsvc')
    .description('Self-hosted email platform: HTTP API, SMTP submission, direct-to-MX delivery with DKIM')
    .option('--config <file>', 'JSON configuration file (or env MAILSVC_CONFIG)')
    .option('--json', 'machine-readable output on stdout')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) });
  registerServerCommands(program, io);
  registerWorkspaceCommands(program, io);
  registerCredentialCommands(program, io);
  registerDomainCommands(program, io);
  registerTemplateCommands(program, io);
  registerSuppressionCommands(program, io);
  registerRouteCommands(program, io);
  registerWorkflowCommands(program, io);
  registerQueueCommands(program, io);
  registerReputationCommands(program, io);
  registerDashboardCommands(program, io);
  registerDoctorCommands(program, io);
  registerDbCommands(program, io);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

/**
 * Runs the CLI and returns its exit code: 0 on success, 1 with a one-line message on stderr
 * otherwise (2 for usage errors). Stack traces only with MAILSVC_DEBUG=1.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CliExit) return err.code;
    if (err instanceof CommanderError) {
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help' ? 0 : 2;
    }
    if (err instanceof ConfigError) {
      io.stderr(`mailsvc: ${err.message}\n`);
      return 1;
    }
    io.stderr(`mailsvc: ${isAppError(err) ? err.message : describe(err)}\n`);
    if (io.env.MAILSVC_DEBUG) io.stderr(`${(err as Error)?.stack ?? ''}\n`);
    return 1;
  }
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'EADDRINUSE') return `address in use: ${(e as { address?: string }).address ?? ''}:${(e as { port?: number }).port ?? ''} (another mailsvc running? change http.port)`;
  if (e?.code === 'EACCES') return `permission denied: ${e.message}`;
  return e?.message ?? String(err);
}
