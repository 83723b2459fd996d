import { resolve } from 'node:path';
import type { Command } from 'commander';
import {
  backupDatabase,
  BackupRefused,
  restoreDatabase,
  type BackupProgress,
  type BackupResult,
} from '../store/infra/backup.js';
import { migrateToLatest, openStore, sqliteFile, type Store } from '../store/infra/db.js';
import { copyDatabase, CopyRefused } from '../store/infra/copy.js';
import { ServeLockBusy } from '../store/infra/serve-lock.js';
import { CliExit, configOf, output, progressOn, type CliIo } from './io.js';
import type { Progress } from './progress.js';

/**
 * Runs a backup or restore of the configured SQLite database with a progress line (pages) on
 * stderr; a refusal is one line and exit code 1.
 */
async function withSqlite(
  cmd: Command,
  io: CliIo,
  verb: 'backup' | 'restore',
  run: (databaseFile: string, progress: (p: BackupProgress) => void) => Promise<BackupResult>,
): Promise<BackupResult> {
  const config = configOf(cmd, io);
  const databaseFile = sqliteFile(config.database);
  if (!databaseFile) {
    const tool =
      verb === 'backup'
        ? 'pg_dump (e.g. pg_dump -Fc -f mailsvc.dump "$DATABASE_URL")'
        : 'pg_restore (or psql for a plain dump)';
    io.stderr(`mailsvc: db ${verb} works on the SQLite database; on PostgreSQL use ${tool}\n`);
    throw new CliExit(1);
  }
  let bar: Progress | undefined;
  try {
    const result = await run(databaseFile, ({ totalPages, remainingPages }) => {
      bar ??= progressOn(io, `db ${verb}`, totalPages, 'pages');
      bar.update(totalPages - remainingPages, totalPages);
    });
    bar?.finish();
    return result;
  } catch (err) {
    bar?.fail();
    if (err instanceof BackupRefused || err instanceof ServeLockBusy) {
      io.stderr(`mailsvc: ${err.message}\n`);
      throw new CliExit(1);
    }
    throw err;
  }
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** `mailsvc db copy`: moves an installation to another database (SQLite → PostgreSQL). */
export function registerDbCommands(program: Command, io: CliIo): void {
  const db = program.command('db').description('database maintenance');
  db.command('backup')
    .description(
      'write a consistent copy of the SQLite database to FILE while the server runs (SQLite backup API); on PostgreSQL use pg_dump',
    )
    .argument('<file>', 'where to write the backup (replaced atomically if it exists)')
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const result = await withSqlite(cmd, io, 'backup', (databaseFile, progress) =>
        backupDatabase(databaseFile, resolve(file), progress),
      );
      output(
        cmd,
        io,
        result,
        () => `Backed up to ${result.file}: ${result.pages} pages, ${mib(result.bytes)}; integrity check ok.`,
      );
    });
  db.command('restore')
    .description('replace the SQLite database with the backup FILE; refused while a server runs on it')
    .argument('<file>', 'a file written by mailsvc db backup')
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const result = await withSqlite(cmd, io, 'restore', (databaseFile, progress) =>
        restoreDatabase(resolve(file), databaseFile, progress),
      );
      output(
        cmd,
        io,
        { ...result, from: resolve(file) },
        () =>
          `Restored ${result.file} from ${resolve(file)}: ${result.pages} pages, ${mib(result.bytes)}; integrity check ok. Start the server to resume.`,
      );
    });
  db.command('copy')
    .description(
      'copy every row of a stopped installation into a fresh database (migrates both first; checks row counts)',
    )
    .requiredOption('--from <url>', 'source database, sqlite:PATH')
    .requiredOption('--to <url>', 'target database, postgres://… (must be empty)')
    .action(async (opts: { from: string; to: string }, cmd: Command) => {
      if (!opts.from.startsWith('sqlite:')) {
        io.stderr('mailsvc: db copy reads from a SQLite database: --from sqlite:PATH\n');
        throw new CliExit(2);
      }
      const source = openStore(opts.from);
      let target: Store | undefined;
      try {
        target = openStore(opts.to);
        for (const [name, store] of [
          ['source', source],
          ['target', target],
        ] as const) {
          const { error, applied } = await migrateToLatest(store);
          if (error) throw error;
          if (applied.length > 0) io.stderr(`${name} ${store.location}: applied ${applied.join(', ')}\n`);
        }
        // One progress line per table, on stderr: stdout keeps only the result.
        let bar: Progress | undefined;
        const copied = await copyDatabase(source, target, (p) => {
          if (p.kind === 'table') {
            bar?.finish();
            bar = progressOn(io, `db copy ${p.table}`, p.rows, 'rows');
          } else bar?.update(p.copied);
        }).catch((err: unknown) => {
          bar?.fail();
          throw err;
        });
        bar?.finish();
        const total = copied.reduce((n, t) => n + t.target, 0);
        output(
          cmd,
          io,
          { from: source.location, to: target.location, tables: copied, rows: total },
          () =>
            `Copied ${total} rows in ${copied.length} tables from ${source.location} to ${target!.location}; counts match.`,
        );
      } catch (err) {
        if (err instanceof CopyRefused) {
          io.stderr(`mailsvc: ${err.message}\n`);
          throw new CliExit(1);
        }
        throw err;
      } finally {
        await source.close();
        await target?.close();
      }
    });
}
