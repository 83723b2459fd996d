import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { validationError } from '../shared/errors.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const readText = (option: string, file: string): string => {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw validationError(option, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
};

export function registerTemplateCommands(program: Command, io: CliIo): void {
  const templates = program.command('templates').description('templates: subject, html and text with {{variables}}');
  templates
    .command('create')
    .description('create a template from files')
    .requiredOption('--name <name>', 'a name to recognise it by')
    .requiredOption('--subject <subject>', 'subject line; may use {{variables}}')
    .requiredOption('--html-file <file>', 'HTML body')
    .option('--text-file <file>', 'plain-text body (default: derived from the HTML at send time)')
    .option('--alias <alias>', 'a name to use instead of the id (workflows and sends may name the template by it)')
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(
      async (
        opts: {
          name: string;
          subject: string;
          htmlFile: string;
          textFile?: string;
          alias?: string;
          workspace?: string;
        },
        cmd: Command,
      ) => {
        const html = readText('html-file', opts.htmlFile);
        const text = opts.textFile ? readText('text-file', opts.textFile) : null;
        const template = await withRuntime(cmd, io, async (rt) =>
          rt.services.templates.create(await workspaceOf(rt, opts.workspace), {
            name: opts.name,
            subject: opts.subject,
            html,
            text,
            ...(opts.alias !== undefined ? { alias: opts.alias } : {}),
          }),
        );
        output(
          cmd,
          io,
          template,
          () =>
            `Created template "${template.name}" (id ${template.id}${template.alias ? `, alias ${template.alias}` : ''}).`,
        );
      },
    );
  templates
    .command('list')
    .description('list templates')
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (opts: { workspace?: string }, cmd: Command) => {
      const { items } = await withRuntime(cmd, io, async (rt) =>
        rt.services.templates.list(await workspaceOf(rt, opts.workspace), { limit: 1000, offset: 0 }),
      );
      output(cmd, io, items, () =>
        items.length === 0
          ? 'No templates.'
          : table([
              ['ID', 'ALIAS', 'NAME', 'SUBJECT', 'UPDATED'],
              ...items.map((t) => [t.id, t.alias ?? '', t.name, t.subject ?? '', t.updated_at]),
            ]),
      );
    });
}
