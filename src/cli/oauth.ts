import type { Command } from 'commander';
import type { ClientView, GrantView } from '../services/oauth.js';
import { parsePage } from '../store/infra/list-page.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const clientsText = (items: ClientView[]): string =>
  items.length === 0
    ? 'No OAuth clients.'
    : table([
        ['CLIENT ID', 'NAME', 'TYPE', 'REGISTERED BY', 'REDIRECT URIS', 'CREATED'],
        ...items.map((c) => [
          c.client_id,
          c.client_name,
          c.token_endpoint_auth_method === 'none' ? 'public' : 'confidential',
          c.registered_by,
          c.redirect_uris.join(' '),
          c.created_at,
        ]),
      ]);

const grantsText = (items: GrantView[]): string =>
  items.length === 0
    ? 'No OAuth grants.'
    : table([
        ['ID', 'APP', 'CLIENT ID', 'USER', 'SCOPES', 'CREATED', 'LAST USED', 'STATE'],
        ...items.map((g) => [
          g.id,
          g.client.name,
          g.client_id,
          g.user_id ?? '-',
          g.scopes.join(' '),
          g.created_at,
          g.last_used_at ?? 'never',
          g.revoked_at ? `revoked ${g.revoked_at}` : 'active',
        ]),
      ]);

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** `mailsvc oauth`: the clients of the authorization server and the grants people made. */
export function registerOAuthCommands(program: Command, io: CliIo): void {
  const oauth = program
    .command('oauth')
    .description('the OAuth authorization server: clients (apps) and the grants people approved');
  const clients = oauth.command('clients').description('apps that may ask people for access');
  clients
    .command('create')
    .description('create a client for a server-side app (confidential: it gets a secret, shown once) or a public one')
    .requiredOption('--name <name>', 'what the consent page calls the app')
    .requiredOption(
      '--redirect-uri <url>',
      'where authorizations return: https, or http on loopback (repeatable)',
      collect,
      [],
    )
    .option('--confidential', 'a server-side app that keeps a client secret (client_secret_basic)', false)
    .action(async (opts: { name: string; redirectUri: string[]; confidential: boolean }, cmd: Command) => {
      const created = await withRuntime(cmd, io, (rt) =>
        rt.services.oauth.createClient({
          name: opts.name,
          redirectUris: opts.redirectUri,
          confidential: opts.confidential,
        }),
      );
      output(cmd, io, created, () =>
        [
          `Created OAuth client "${created.client.client_name}": client_id ${created.client.client_id}.`,
          ...(created.secret
            ? ['Its secret is shown once; store it now:', '', `  ${created.secret}`, '']
            : ['A public client: it authenticates with PKCE only, no secret.']),
        ].join('\n'),
      );
    });
  clients
    .command('list')
    .description('list clients, registered ones (RFC 7591) and those an admin created')
    .action(async (_opts: unknown, cmd: Command) => {
      const items = await withRuntime(cmd, io, (rt) => rt.services.oauth.listClients());
      output(cmd, io, items, () => clientsText(items));
    });
  clients
    .command('remove <clientId>')
    .description('remove a client: every grant it holds is revoked')
    .action(async (clientId: string, _opts: unknown, cmd: Command) => {
      const removed = await withRuntime(cmd, io, (rt) => rt.services.oauth.removeClient(clientId));
      output(
        cmd,
        io,
        removed,
        () => `Removed client ${removed.client_id} (${removed.client_name}); its grants are revoked.`,
      );
    });

  const grants = oauth.command('grants').description('what people authorized apps to do, per workspace');
  grants
    .command('list')
    .description('list the grants of a workspace, newest first')
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .option('--limit <n>', 'how many', '50')
    .action(async (opts: { workspace?: string; limit: string }, cmd: Command) => {
      const page = await withRuntime(cmd, io, async (rt) =>
        rt.services.oauth.listGrants(
          { workspaceId: await workspaceOf(rt, opts.workspace) },
          parsePage({ limit: opts.limit }, 'keyset'),
        ),
      );
      output(cmd, io, page.items, () => grantsText(page.items));
    });
  grants
    .command('revoke <id>')
    .description("revoke a grant: the app's tokens stop working at once")
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (id: string, opts: { workspace?: string }, cmd: Command) => {
      const revoked = await withRuntime(cmd, io, async (rt) =>
        rt.services.oauth.revokeGrant(await workspaceOf(rt, opts.workspace), id),
      );
      output(cmd, io, revoked, () => `Revoked grant ${revoked.id} (${revoked.client.name}).`);
    });
}
