import type { Command } from 'commander';
import type { ContactImportOptions } from '../services/marketing/contact-imports/contact-imports.js';
import { validationError } from '../shared/errors.js';
import { CliExit, output, progressOn, withRuntime, workspaceOf, type CliIo } from './io.js';

const jsonOption = (name: string) => (value: string) => {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw validationError(name, 'must be JSON');
  }
};

export function registerContactCommands(program: Command, io: CliIo): void {
  const cmd = program.command('contacts').description('contacts (subscribers): bulk import');

  cmd
    .command('import <file>')
    .description(
      'import contacts from a CSV file with a header row (email, first_name, last_name, unsubscribed, declared contact properties); rows are upserted by address',
    )
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .option('--on-conflict <mode>', 'upsert (update known addresses) or skip (leave them)', 'upsert')
    .option(
      '--column-map <json>',
      'which columns hold which fields, as the API takes it: {"email":"E-mail","properties":{"plan":{"column":"Plan","type":"string"}}}',
      jsonOption('column-map'),
    )
    .option('--segment <id...>', 'add every imported contact to these segments (audiences)')
    .action(
      async (
        file: string,
        opts: { workspace?: string; onConflict: string; columnMap?: unknown; segment?: string[] },
        c: Command,
      ) => {
        const options = {
          on_conflict: opts.onConflict,
          ...(opts.columnMap !== undefined ? { column_map: opts.columnMap } : {}),
          ...(opts.segment ? { segments: opts.segment.map((id) => ({ id })) } : {}),
        } as ContactImportOptions;
        const progress = progressOn(io, 'contacts import', null, 'bytes');
        const result = await withRuntime(c, io, async (rt) =>
          rt.services.contactImports.importFile(
            await workspaceOf(rt, opts.workspace),
            file,
            options,
            (_rows, bytesRead, bytes) => progress.update(bytesRead, bytes),
          ),
        ).catch((err: unknown) => {
          progress.fail();
          throw err;
        });
        if (result.status === 'failed') progress.fail();
        else progress.finish();
        const { counts } = result;
        output(c, io, result, () =>
          [
            result.status === 'failed'
              ? `Import ${result.id} failed: ${result.failure}`
              : `Imported ${file} (import ${result.id}).`,
            `${counts.total} rows: ${counts.created} created, ${counts.updated} updated, ${counts.skipped} skipped, ${counts.failed} failed.`,
            ...result.errors.slice(0, 20).map((e) => `  line ${e.line}: ${e.reason}`),
            counts.failed > 20 ? `  … and ${counts.failed - 20} more rows not imported` : '',
          ]
            .filter(Boolean)
            .join('\n'),
        );
        if (result.status === 'failed') throw new CliExit(1);
      },
    );
}
