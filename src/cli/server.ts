import type { Command } from 'commander';
import { startServer } from '../main.js';
import { createLogger } from '../shared/logger.js';
import { migrateToLatest, openStore } from '../store/db.js';
import { configOf, output, type CliIo } from './io.js';

export function registerServerCommands(program: Command, io: CliIo): void {
  program
    .command('serve')
    .description('run the HTTP API, SMTP listeners, delivery workers and webhook dispatcher')
    .action(async (_opts: unknown, cmd: Command) => {
      const config = configOf(cmd, io);
      const logger = createLogger(config.log.level);
      const server = await startServer(config, { logger });
      io.stderr(`mailsvc: HTTP API on ${server.httpUrl} (database ${server.runtime.store.location})\n`);
      const signIn = config.dashboard.password ? 'with dashboard.password or `mailsvc dashboard login`' : 'run `mailsvc dashboard login` for a link';
      io.stderr(`mailsvc: dashboard on ${server.httpUrl}/dashboard (sign in: ${signIn})\n`);
      if (server.smtp) {
        const implicit = server.smtp.implicitTls === null ? '' : `, implicit TLS on ${config.smtp.submission.host}:${server.smtp.implicitTls}`;
        io.stderr(`mailsvc: SMTP submission with STARTTLS on ${config.smtp.submission.host}:${server.smtp.starttls}${implicit}\n`);
      }
      await new Promise<void>((resolve) => {
        const shutdown = (signal: string) => {
          logger.info({ signal }, 'shutting down');
          server.stop().then(resolve, (err: unknown) => {
            logger.error({ err }, 'shutdown failed');
            resolve();
          });
        };
        process.once('SIGTERM', () => shutdown('SIGTERM'));
        process.once('SIGINT', () => shutdown('SIGINT'));
      });
    });

  program
    .command('migrate')
    .description('apply pending database migrations (serve also does this on start)')
    .action(async (_opts: unknown, cmd: Command) => {
      const config = configOf(cmd, io);
      const store = openStore(config.database, { poolSize: config.databasePoolSize });
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
