import type { Command } from 'commander';
import type { AuditView } from '../services/audit.js';
import { validationError } from '../shared/errors.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const count = (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 100)
    throw validationError('limit', 'must be a whole number from 1 to 100');
  return value;
};

const who = (e: AuditView) => (e.actor.id ? `${e.actor.type}:${e.actor.id}` : e.actor.type);
const detailText = (e: AuditView) =>
  e.detail
    ? Object.entries(e.detail)
        .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
        .join(' ')
    : '';

/** `mailsvc audit`: the audit log of a workspace (and the instance's own changes), newest first. */
export function registerAuditCommands(program: Command, io: CliIo): void {
  program
    .command('audit')
    .description('who changed what: the audit log of a workspace and of the instance (IP pools), newest first')
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .option('--limit <n>', 'at most this many (1 to 100)', count, '50')
    .option('--after <id>', 'entries older than this one (the next page)')
    .option(
      '--action <action>',
      'only this action (api_key.created), or those starting with a prefix ending in "." (domain.)',
    )
    .option('--actor <type>', 'only changes by api_key, user, dashboard, cli or system')
    .option('--object <id>', 'only changes to this object')
    .action(
      async (
        opts: { workspace?: string; limit: string; after?: string; action?: string; actor?: string; object?: string },
        c: Command,
      ) => {
        const page = await withRuntime(c, io, async (rt) =>
          rt.services.audit.list(
            { workspaceId: await workspaceOf(rt, opts.workspace), instance: true },
            {
              limit: opts.limit,
              after: opts.after,
              action: opts.action,
              actor_type: opts.actor,
              object_id: opts.object,
            },
          ),
        );
        output(c, io, page, () =>
          page.data.length === 0
            ? 'No audit entries.'
            : [
                table([
                  ['WHEN', 'WHO', 'FROM', 'ACTION', 'OBJECT', 'DETAIL'],
                  ...page.data.map((e) => [
                    e.created_at,
                    who(e),
                    e.client_address ?? '-',
                    e.action,
                    e.object_id ?? '-',
                    detailText(e).slice(0, 80),
                  ]),
                ]),
                page.has_more ? `(more: --after ${page.data.at(-1)!.id})` : '',
              ]
                .filter(Boolean)
                .join('\n'),
        );
      },
    );
}
