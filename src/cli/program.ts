import { actingAs } from '../shared/actor.js';
import { registerIpPoolCommands } from './ip-pools.js';
import { registerDeliveryCommands } from './delivery.js';
import { Command, CommanderError } from 'commander';
import { ConfigError, envName } from '../config/load-config.js';
import { ListenError } from '../shared/listen-error.js';
import { classifyFault, isAppError, type AppError } from '../shared/errors.js';
import { registerCredentialCommands } from './credentials.js';
import { registerOAuthCommands } from './oauth.js';
import { registerDashboardCommands } from './dashboard.js';
import { registerDbCommands } from './db.js';
import { registerMcpCommands } from './mcp.js';
import { registerDoctorCommands } from './doctor.js';
import { registerInitCommands } from './init.js';
import { registerDomainCommands } from './domains.js';
import { CliExit, type CliIo } from './io.js';
import { registerQueueCommands } from './queue.js';
import { registerReputationCommands } from './reputation.js';
import { registerRouteCommands } from './routes.js';
import { registerServerCommands } from './server.js';
import { registerTemplateCommands } from './templates.js';
import { registerSuppressionCommands } from './suppressions.js';
import { registerAuditCommands } from './audit.js';
import { registerUserCommands } from './users.js';
import { registerContactCommands } from './contacts.js';
import { registerWorkflowCommands } from './workflows.js';
import { registerWorkspaceCommands } from './workspaces.js';
import { packageVersion } from '../shared/package-version.js';

function buildProgram(io: CliIo): Command {
  const program = new Command('mailsvc')
    .description('Self-hosted email platform: HTTP API, SMTP submission, direct-to-MX delivery with DKIM')
    .option('--config <file>', 'JSON configuration file (or env MAILSVC_CONFIG)')
    .option('--json', 'machine-readable output on stdout')
    .version(packageVersion(), '-v, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) });
  registerInitCommands(program, io);
  registerServerCommands(program, io);
  registerWorkspaceCommands(program, io);
  registerCredentialCommands(program, io);
  registerOAuthCommands(program, io);
  registerDomainCommands(program, io);
  registerTemplateCommands(program, io);
  registerSuppressionCommands(program, io);
  registerAuditCommands(program, io);
  registerUserCommands(program, io);
  registerContactCommands(program, io);
  registerRouteCommands(program, io);
  registerWorkflowCommands(program, io);
  registerQueueCommands(program, io);
  registerIpPoolCommands(program, io);
  registerDeliveryCommands(program, io);
  registerReputationCommands(program, io);
  registerDashboardCommands(program, io);
  registerDoctorCommands(program, io);
  registerDbCommands(program, io);
  registerMcpCommands(program, io);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

/** sysexits.h's EX_TEMPFAIL: the database or the disk failed; the same command may succeed later. */
const EXIT_TEMPFAIL = 75;

/**
 * Runs the CLI and returns its exit code: 0 on success, 1 with a one-line message on stderr
 * otherwise (2 for usage errors, 75 for a fault of the database or the disk: try again later).
 * Stack traces only with MAILSVC_DEBUG=1.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    // Changes made by a command are the CLI's in the audit log; `serve`'s come from its surfaces.
    const actor = { type: argv[0] === 'serve' ? ('system' as const) : ('cli' as const), id: null, address: null };
    await actingAs(actor, () => program.parseAsync(argv, { from: 'user' }));
    return 0;
  } catch (err) {
    if (err instanceof CliExit) return err.code;
    if (err instanceof CommanderError) {
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help'
        ? 0
        : 2;
    }
    if (err instanceof ConfigError) {
      io.stderr(`mailsvc: ${err.message}\n`);
      return 1;
    }
    const fault = classifyFault(err, true);
    io.stderr(`mailsvc: ${fault ? faultLine(fault) : isAppError(err) ? err.message : describe(err)}\n`);
    if (io.env.MAILSVC_DEBUG) io.stderr(`${(err as Error)?.stack ?? ''}\n`);
    return fault ? EXIT_TEMPFAIL : 1;
  }
}

/** A fault in one line: what failed beneath, as the driver said it, and that trying again may work. */
function faultLine(fault: AppError): string {
  const cause = (fault.cause as Error | undefined)?.message;
  const what = fault.code === 'storage_full' ? 'the disk is full' : 'the database or its disk failed';
  return `${what}${cause && cause !== fault.message ? ` (${cause.split('\n')[0]})` : ''}; try again later`;
}

function describe(err: unknown): string {
  if (err instanceof ListenError) return describeListenError(err);
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'EACCES') return `permission denied: ${e.message}`;
  return e?.message ?? String(err);
}

/** What went wrong with a listener and the setting that fixes it, with its environment variable. */
function describeListenError(err: ListenError): string {
  const where = `${err.host}:${err.port}`;
  const change = `change ${err.setting} (${envName(err.setting)})`;
  switch (err.code) {
    case 'EADDRINUSE':
      return `address in use: ${where} (${err.setting}): another program, or another mailsvc, listens there; stop it or ${change}`;
    case 'EACCES':
      return `permission denied to listen on ${where} (${err.setting}): ports below 1024 need root or the CAP_NET_BIND_SERVICE capability (config/mailsvc.service grants it); or ${change}`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: no network interface of this machine has the address ${err.host}; change ${err.hostSetting} (${envName(err.hostSetting)})`;
    default:
      return `${err.message}; ${change}`;
  }
}
