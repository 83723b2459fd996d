import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { McpCaller, McpDeps } from '../intake/mcp/tool.js';
import { openRuntime, type Runtime } from '../runtime.js';
import { AppError } from '../shared/errors.js';
import { createLogger } from '../shared/logger.js';
import { configOf, type CliIo } from './io.js';
import { packageVersion } from '../shared/package-version.js';

/** The key: MAILSVC_API_KEY, or the first line of --key-file (a file keeps it out of the process list and the environment). */
function keyOf(io: CliIo, keyFile: string | undefined): string {
  if (keyFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(keyFile, 'utf8');
    } catch (err) {
      throw new AppError(
        'validation_error',
        `--key-file: cannot read ${keyFile} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    const key = text.split(/\r?\n/)[0]!.trim();
    if (!key) throw new AppError('validation_error', `--key-file: ${keyFile} is empty`);
    return key;
  }
  const key = io.env.MAILSVC_API_KEY?.trim();
  if (!key) throw new AppError('unauthorized', 'mcp needs a key: set MAILSVC_API_KEY or pass --key-file FILE');
  return key;
}

/**
 * Who calls: the key authenticated as on /v1, again on every call (a key revoked while the
 * assistant runs stops working at once), and its workspace (a master key's from --workspace).
 */
async function callerFor(runtime: Runtime, key: string, workspaceId: string | undefined): Promise<McpCaller> {
  const { services } = runtime;
  const principal = await services.credentials.authenticate(key, 'v1');
  const id = principal.master ? workspaceId : principal.workspaceId!;
  if (!id) throw new AppError('validation_error', 'a master key needs --workspace ID');
  if (!principal.master && workspaceId !== undefined && workspaceId !== id)
    throw new AppError('forbidden', 'This key has no access to that workspace');
  const workspace = await services.workspaces.find(id);
  if (!workspace)
    throw new AppError(
      principal.master ? 'not_found' : 'unauthorized',
      principal.master ? `Workspace ${id} not found` : 'Invalid API key',
    );
  return { principal, workspace };
}

export function registerMcpCommands(program: Command, io: CliIo): void {
  program
    .command('mcp')
    .description(
      'serve the Model Context Protocol on stdin/stdout for an assistant (docs/assistants.md); key from MAILSVC_API_KEY or --key-file',
    )
    .option('--key-file <file>', 'read the API key (or oat_ token) from the first line of this file')
    .option('--workspace <id>', 'the workspace a master key acts on')
    .action(async (opts: { keyFile?: string; workspace?: string }, cmd: Command) => {
      const key = keyOf(io, opts.keyFile);
      const config = configOf(cmd, io);
      // stdout carries the protocol and nothing else: every log line goes to stderr.
      const logger = createLogger(config.log.level === 'silent' ? 'silent' : 'warn', {
        write: (s: string) => io.stderr(s),
      });
      const runtime = await openRuntime(config, { logger });
      try {
        // A wrong key is told at once, on stderr with a non-zero exit, not at the first call.
        await callerFor(runtime, key, opts.workspace);
        const deps: McpDeps = { services: runtime.services, config, clock: runtime.deps.clock, logger };
        // Imported here, not at the top: every other command (serve among them) loads this file too.
        const [{ buildMcpServer }, { StdioServerTransport }] = await Promise.all([
          import('../intake/mcp/build-server.js'),
          import('@modelcontextprotocol/sdk/server/stdio.js'),
        ]);
        const server = buildMcpServer(deps, packageVersion(), () => callerFor(runtime, key, opts.workspace));
        // Bounded as an HTTP body is: a message larger than http.bodyLimit ends the session.
        const transport = new StdioServerTransport(process.stdin, process.stdout, {
          maxBufferSize: config.http.bodyLimit,
        });
        const closed = new Promise<void>((resolve) => {
          server.server.onclose = () => resolve();
        });
        const end = () => void server.close();
        process.stdin.once('end', end);
        process.once('SIGTERM', end);
        process.once('SIGINT', end);
        await server.connect(transport);
        await closed;
        process.removeListener('SIGTERM', end);
        process.removeListener('SIGINT', end);
      } finally {
        await runtime.close();
      }
    });
}
