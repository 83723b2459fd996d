import type { Command } from 'commander';
import { migrateToLatest, openStore, type Store } from '../store/db.js';
import { copyDatabase, CopyRefused } from '../store/copy.js';
import { CliExit, output, progressOn, type CliIo } from './io.js';
import type { Progress } from './progress.js';

/** `mailsvc db copy`: moves an installation to another database (SQLite → PostgreSQL). */
export function registerDbCommands(program: Command, io: CliIo): void {
  const db = program.command('db').description('database maintenance');
  db.command('copy')
    .description('copy every row of a stopped installation into a fresh database (migrates both first; checks row counts)')
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
        for (const [name, store] of [['source', source], ['target', target]] as const) {
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
        output(cmd, io, { from: source.location, to: target.location, tables: copied, rows: total }, () => `Copied ${total} rows in ${copied.length} tables from ${source.location} to ${target!.location}; counts match.`);
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
