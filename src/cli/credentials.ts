import type { Command } from 'commander';
import { ALL_SCOPES, type CreatedCredential, type CredentialView } from '../services/credentials.js';
import { parseDuration } from '../shared/duration.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const listText = (items: CredentialView[]): string =>
  items.length === 0
    ? 'No keys.'
    : table([
        ['ID', 'PREFIX', 'NAME', 'KIND', 'ACCESS', 'WORKSPACE', 'CREATED', 'LAST USED', 'STATE'],
        ...items.map((k) => [
          k.id,
          `${k.prefix}…`,
          k.name,
          k.master ? 'master' : k.kind,
          k.permission === 'sending_access' ? `sending${k.domain_id ? ` (domain ${k.domain_id})` : ''}` : 'full',
          k.workspace_id ?? '(all)',
          k.created_at,
          k.last_used_at ?? 'never',
          k.revoked_at ? `revoked ${k.revoked_at}` : k.expires_at ? `expires ${k.expires_at}` : 'active',
        ]),
      ]);

const createdText = (what: string, created: CreatedCredential): string =>
  [
    `Created ${what} "${created.credential.name}" (id ${created.credential.id}, workspace ${created.credential.workspace_id ?? 'all'}).`,
    'It is shown once; store it now:',
    '',
    `  ${created.secret}`,
    '',
  ].join('\n');

const asJson = (created: CreatedCredential) => ({ ...created.credential, key: created.secret });

/** A key's lifetime in seconds: `30d`, `12h`, `90m`, `3600` (seconds), `1 year`, or `never`. */
const lifetime = (value: string): number | null =>
  value === 'never' ? null : Math.round(parseDuration('expires-in', value, 100 * 365 * 86_400_000) / 1000);

export function registerCredentialCommands(program: Command, io: CliIo): void {
  const keys = program.command('keys').description('API keys: sk_live_, sk_test_ and master keys');
  keys
    .command('create')
    .description('create an API key and print it once')
    .requiredOption('--name <name>', 'a name to recognise the key by')
    .option('--test', 'a test key (sk_test_): runs the whole pipeline, nothing is delivered')
    .option('--master', 'a master key: reaches every workspace; requests name one with workspace_id')
    .option('--sending-only', 'a key that can only send email (sending_access), not manage anything')
    .option('--domain <domain>', 'with --sending-only: the one domain (name or id) the key may send from')
    .option('--workspace <id>', 'workspace of the key (default: the default workspace)')
    .action(
      async (
        opts: {
          name: string;
          test?: boolean;
          master?: boolean;
          sendingOnly?: boolean;
          domain?: string;
          workspace?: string;
        },
        cmd: Command,
      ) => {
        const created = await withRuntime(cmd, io, async (rt) =>
          rt.services.credentials.createKey({
            name: opts.name,
            test: opts.test === true,
            master: opts.master === true,
            permission: opts.sendingOnly ? 'sending_access' : undefined,
            domain: opts.domain,
            workspaceId: opts.master ? null : await workspaceOf(rt, opts.workspace),
          }),
        );
        output(cmd, io, asJson(created), () =>
          createdText(opts.master ? 'master key' : `${created.credential.kind} API key`, created),
        );
      },
    );
  keys
    .command('list')
    .description('list API keys (prefix, name, kind, created, last used)')
    .option('--workspace <id>', 'only this workspace')
    .action(async (opts: { workspace?: string }, cmd: Command) => {
      const items = await withRuntime(cmd, io, (rt) =>
        rt.services.credentials.list({ workspaceId: opts.workspace, oauth: false }),
      );
      output(cmd, io, items, () => listText(items));
    });
  keys
    .command('revoke <id>')
    .description('revoke an API key: it stops working at once')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const revoked = await withRuntime(cmd, io, (rt) => rt.services.credentials.revoke(id));
      output(cmd, io, revoked, () => `Revoked key ${revoked.id} (${revoked.prefix}…).`);
    });

  const tokens = program
    .command('tokens')
    .description(
      'OAuth access tokens (oat_) for automation, accepted on /v1 and /mcp (apps get theirs through OAuth: mailsvc oauth)',
    );
  tokens
    .command('create')
    .description('mint an access token with scopes and print it once')
    .requiredOption('--scopes <list>', `comma-separated: ${ALL_SCOPES.join(', ')}`)
    .option('--name <name>', 'a name to recognise the token by', 'access token')
    .option('--workspace <id>', 'workspace of the token (default: the default workspace)')
    .option('--expires-in <duration>', 'lifetime: seconds, or 90m, 12h, 30d, or never', '30d')
    .action(async (opts: { scopes: string; name: string; workspace?: string; expiresIn: string }, cmd: Command) => {
      const created = await withRuntime(cmd, io, async (rt) =>
        rt.services.credentials.createToken({
          name: opts.name,
          workspaceId: await workspaceOf(rt, opts.workspace),
          scopes: opts.scopes
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
          expiresInSeconds: lifetime(opts.expiresIn),
        }),
      );
      output(cmd, io, asJson(created), () => createdText('access token', created));
    });
  tokens
    .command('list')
    .description('list access tokens')
    .option('--workspace <id>', 'only this workspace')
    .action(async (opts: { workspace?: string }, cmd: Command) => {
      const items = await withRuntime(cmd, io, (rt) =>
        rt.services.credentials.list({ workspaceId: opts.workspace, oauth: true }),
      );
      output(cmd, io, items, () => listText(items));
    });
  tokens
    .command('revoke <id>')
    .description('revoke an access token')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const revoked = await withRuntime(cmd, io, (rt) => rt.services.credentials.revoke(id));
      output(cmd, io, revoked, () => `Revoked token ${revoked.id} (${revoked.prefix}…).`);
    });
}
