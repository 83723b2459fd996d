import type { Command } from 'commander';
import { prettyDestination } from '../shared/log-format.js';
import { createLogger } from '../shared/logger.js';
import { commandName } from './command-name.js';
import { migrateToLatest, openStore, storeOptions } from '../store/infra/db.js';
import { configOf, output, type CliIo } from './io.js';

export function registerServerCommands(program: Command, io: CliIo): void {
  program
    .command('serve')
    .description('run the HTTP API, SMTP listeners, delivery workers and webhook dispatcher')
    .option(
      '--log-format <format>',
      'pretty (coloured lines, local time) or json; default: pretty on a terminal, json otherwise (log.format)',
    )
    .action(async (opts: { logFormat?: string }, cmd: Command) => {
      const config = configOf(cmd, io, opts.logFormat === undefined ? undefined : { log: { format: opts.logFormat } });
      const pretty = config.log.format === 'pretty' || (config.log.format === 'auto' && io.stdoutIsTTY === true);
      const color = pretty && io.stdoutIsTTY === true && !io.env.NO_COLOR;
      const logger = createLogger(
        config.log.level,
        pretty ? prettyDestination((text) => io.stdout(text), color) : undefined,
      );
      // Listening before the start, so a signal during a slow start (migrations, a distant
      // PostgreSQL) stops the server once it is up instead of killing it mid-write.
      let signalled: (signal: string) => void = () => {};
      const signal = new Promise<string>((resolve) => (signalled = resolve));
      const onSignal = (name: string) => () => signalled(name);
      const onTerm = onSignal('SIGTERM');
      const onInt = onSignal('SIGINT');
      process.once('SIGTERM', onTerm);
      process.once('SIGINT', onInt);
      let server: Awaited<ReturnType<typeof import('../main.js').startServer>>;
      try {
        // The listeners and everything under them load here, not when the CLI starts: every
        // other command (and --help, --version) would pay for the whole server at each run.
        const { startServer } = await import('../main.js');
        server = await startServer(config, { logger });
      } catch (err) {
        process.removeListener('SIGTERM', onTerm);
        process.removeListener('SIGINT', onInt);
        throw err;
      }
      const mailsvc = commandName(io.env);
      io.stderr(`mailsvc: HTTP API on ${server.httpUrl} (database ${server.runtime.store.location})\n`);
      const signIn = config.dashboard.password
        ? `with dashboard.password or \`${mailsvc} dashboard login\``
        : `run \`${mailsvc} dashboard login\` for a link`;
      io.stderr(`mailsvc: dashboard on ${server.httpUrl}/dashboard (sign in: ${signIn})\n`);
      if (server.smtp) {
        const implicit =
          server.smtp.implicitTls === null
            ? ''
            : `, implicit TLS on ${config.smtp.submission.host}:${server.smtp.implicitTls}`;
        io.stderr(
          `mailsvc: SMTP submission with STARTTLS on ${config.smtp.submission.host}:${server.smtp.starttls}${implicit}\n`,
        );
      }
      if (server.inboundPort !== null)
        io.stderr(
          `mailsvc: inbound SMTP (bounces, reports, receiving) on ${config.smtp.inbound.host}:${server.inboundPort}\n`,
        );
      const { localSettings } = await import('../checks/doctor.js');
      const local = localSettings(config);
      if (local.length > 0) {
        io.stderr(
          `mailsvc: local mode (${local.map((s) => s.key).join(', ')} only work on this machine): test keys work; for a real domain run \`${mailsvc} init\`\n`,
        );
      }
      logger.info({ signal: await signal }, 'shutting down');
      process.removeListener('SIGTERM', onTerm);
      process.removeListener('SIGINT', onInt);
      await server.stop().catch((err: unknown) => logger.error({ err }, 'shutdown failed'));
    });

  program
    .command('migrate')
    .description('apply pending database migrations (serve also does this on start)')
    .action(async (_opts: unknown, cmd: Command) => {
      const config = configOf(cmd, io);
      const store = openStore(config.database, storeOptions(config));
      try {
        const { applied, error } = await migrateToLatest(store);
        if (error) throw error;
        output(cmd, io, { database: store.location, applied }, () =>
          applied.length === 0 ? `${store.location}: up to date.` : `${store.location}: applied ${applied.join(', ')}.`,
        );
      } finally {
        await store.close();
      }
    });
}
