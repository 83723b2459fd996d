import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  SUPPRESSION_REASONS,
  SUPPRESSION_SCOPES,
  type SuppressionReason,
  type SuppressionView,
} from '../services/suppressions.js';
import type { SuppressionScope } from '../store/suppressions.js';
import { validationError } from '../shared/errors.js';
import { output, progressOn, table, withRuntime, workspaceOf, type CliIo } from './io.js';
import { isOneOf } from '../shared/one-of.js';

const oneOf =
  <T extends string>(name: string, values: readonly T[]) =>
  (value: string): T => {
    if (!isOneOf(values, value)) throw validationError(name, `"${value}" is not one of ${values.join(', ')}`);
    return value;
  };

const count = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value)) throw validationError(name, 'must be a whole number');
  return Number(value);
};

const listText = (items: SuppressionView[], total: number) =>
  items.length === 0
    ? 'No suppressions.'
    : [
        table([
          ['EMAIL', 'REASON', 'SCOPE', 'ADDED', 'DETAIL'],
          ...items.map((s) => [s.email, s.reason, s.scope, s.created_at, (s.detail ?? '').slice(0, 60)]),
        ]),
        items.length < total ? `(${items.length} of ${total}; --offset for more)` : '',
      ]
        .filter(Boolean)
        .join('\n');

export function registerSuppressionCommands(program: Command, io: CliIo): void {
  const cmd = program
    .command('suppressions')
    .description('the suppression list: addresses and domains mail is never sent to');
  const ws = (c: Command) => c.option('--workspace <id>', 'workspace (default: the default workspace)');

  ws(cmd.command('list').description('list suppressed addresses and domains, newest first'))
    .option('--limit <n>', 'at most this many', count('limit'), 100)
    .option('--offset <n>', 'skip this many', count('offset'), 0)
    .action(async (opts: { workspace?: string; limit: number; offset: number }, c: Command) => {
      const { items, total } = await withRuntime(c, io, async (rt) =>
        rt.services.suppressions.list(await workspaceOf(rt, opts.workspace), {
          limit: opts.limit,
          offset: opts.offset,
        }),
      );
      output(c, io, { suppressions: items, total }, () => listText(items, total));
    });

  ws(cmd.command('add <email>').description('suppress an address, or a whole domain written @example.com'))
    .option(
      '--reason <reason>',
      `one of ${SUPPRESSION_REASONS.join(', ')}`,
      oneOf('reason', SUPPRESSION_REASONS),
      'manual',
    )
    .option(
      '--scope <scope>',
      `${SUPPRESSION_SCOPES.join(' or ')} (marketing: transactional mail still goes)`,
      oneOf('scope', SUPPRESSION_SCOPES),
    )
    .option('--detail <text>', 'a note kept with the entry')
    .action(
      async (
        value: string,
        opts: { workspace?: string; reason: SuppressionReason; scope?: SuppressionScope; detail?: string },
        c: Command,
      ) => {
        const isDomain = value.startsWith('@') || !value.includes('@');
        const added = await withRuntime(c, io, async (rt) =>
          rt.services.suppressions.add(await workspaceOf(rt, opts.workspace), {
            ...(isDomain ? { domain: value.replace(/^@/, '') } : { email: value }),
            reason: opts.reason,
            scope: opts.scope,
            detail: opts.detail,
          }),
        );
        output(c, io, added, () => `Suppressed ${added.email} (${added.reason}, scope ${added.scope}).`);
      },
    );

  ws(cmd.command('remove <email>').description('remove an address or @domain from the list')).action(
    async (value: string, opts: { workspace?: string }, c: Command) => {
      const removed = await withRuntime(c, io, async (rt) =>
        rt.services.suppressions.remove(await workspaceOf(rt, opts.workspace), value),
      );
      output(c, io, { email: removed.email, deleted: true }, () => `Removed ${removed.email}.`);
    },
  );

  ws(
    cmd
      .command('import <file>')
      .description('add every address or @domain of a file: one per line, or CSV with the address first'),
  )
    .option(
      '--reason <reason>',
      `one of ${SUPPRESSION_REASONS.join(', ')}`,
      oneOf('reason', SUPPRESSION_REASONS),
      'manual',
    )
    .option('--scope <scope>', SUPPRESSION_SCOPES.join(' or '), oneOf('scope', SUPPRESSION_SCOPES))
    .action(
      async (
        file: string,
        opts: { workspace?: string; reason: SuppressionReason; scope?: SuppressionScope },
        c: Command,
      ) => {
        let text: string;
        try {
          text = readFileSync(file, 'utf8');
        } catch (err) {
          throw validationError(
            'file',
            `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
          );
        }
        const progress = progressOn(io, 'suppressions import', null, 'entries');
        const result = await withRuntime(c, io, async (rt) =>
          rt.services.suppressions.importLines(await workspaceOf(rt, opts.workspace), text.split(/\r?\n/), {
            reason: opts.reason,
            scope: opts.scope,
            onProgress: (written, total) => progress.update(written, total),
          }),
        ).catch((err: unknown) => {
          progress.fail();
          throw err;
        });
        progress.finish();
        output(c, io, result, () =>
          [
            `Imported ${result.added} new entries (${result.alreadyListed} already listed).`,
            ...result.invalid.slice(0, 20).map((i) => `  line ${i.line}: ${i.error}`),
            result.invalid.length > 20 ? `  … and ${result.invalid.length - 20} more invalid lines` : '',
          ]
            .filter(Boolean)
            .join('\n'),
        );
      },
    );
}
