import type { Command } from 'commander';
import type { RouteView } from '../services/receiving/routes.js';
import { validationError } from '../shared/errors.js';
import { ROUTE_ACTIONS, ROUTE_KINDS, type RouteAction, type RouteKind } from '../store/receiving.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';
import { isOneOf } from '../shared/one-of.js';

const oneOf =
  <T extends string>(name: string, values: readonly T[]) =>
  (value: string): T => {
    if (!isOneOf(values, value)) throw validationError(name, `"${value}" is not one of ${values.join(', ')}`);
    return value;
  };

const describe = (r: RouteView) => `${r.address} -> ${r.action}${r.name ? ` (${r.name})` : ''}, id ${r.id}`;

export function registerRouteCommands(program: Command, io: CliIo): void {
  const routes = program
    .command('routes')
    .description('receiving routes: which addresses of a verified domain take mail, and what happens to it');
  const ws = (c: Command) => c.option('--workspace <id>', 'workspace (default: the default workspace)');
  const actions = ROUTE_ACTIONS.join(', ');

  ws(
    routes
      .command('add <address>')
      .description('take mail for name@domain, a pattern such as reply+*@domain, or *@domain (catch-all)'),
  )
    .option(
      '--action <action>',
      `${actions} (webhook: store and emit email.received)`,
      oneOf('action', ROUTE_ACTIONS),
      'webhook',
    )
    .option('--name <name>', 'a label for the route')
    .action(async (address: string, opts: { workspace?: string; action: RouteAction; name?: string }, cmd: Command) => {
      const route = await withRuntime(cmd, io, async (rt) =>
        rt.services.routes.add(await workspaceOf(rt, opts.workspace), {
          address,
          action: opts.action,
          name: opts.name,
        }),
      );
      output(
        cmd,
        io,
        route,
        () =>
          `Added ${describe(route)}.\nPublish the domain's MX record (mailsvc domains dns ${route.domain}) so mail comes here.`,
      );
    });

  ws(routes.command('list').description('list routes, oldest first'))
    .option('--kind <kind>', ROUTE_KINDS.join(', '), oneOf('kind', ROUTE_KINDS))
    .action(async (opts: { workspace?: string; kind?: RouteKind }, cmd: Command) => {
      const { items, total } = await withRuntime(cmd, io, async (rt) =>
        rt.services.routes.list(await workspaceOf(rt, opts.workspace), { limit: 1000, offset: 0, kind: opts.kind }),
      );
      output(cmd, io, { routes: items, total }, () =>
        items.length === 0
          ? 'No routes: mail to every address is refused.'
          : table([
              ['ID', 'ADDRESS', 'ACTION', 'NAME', 'LAST RECEIVED'],
              ...items.map((r) => [r.id, r.address, r.action, r.name ?? '', r.last_received_at ?? 'never']),
            ]),
      );
    });

  ws(routes.command('update <route>').description('change the action or name of a route (by id or address)'))
    .option('--action <action>', actions, oneOf('action', ROUTE_ACTIONS))
    .option('--name <name>', 'a label for the route ("" removes it)')
    .action(async (ref: string, opts: { workspace?: string; action?: RouteAction; name?: string }, cmd: Command) => {
      const route = await withRuntime(cmd, io, async (rt) =>
        rt.services.routes.update(await workspaceOf(rt, opts.workspace), ref, { action: opts.action, name: opts.name }),
      );
      output(cmd, io, route, () => `Updated ${describe(route)}.`);
    });

  ws(
    routes
      .command('remove <route>')
      .description('remove a route (by id or address); its addresses are refused from then on'),
  ).action(async (ref: string, opts: { workspace?: string }, cmd: Command) => {
    const route = await withRuntime(cmd, io, async (rt) =>
      rt.services.routes.remove(await workspaceOf(rt, opts.workspace), ref),
    );
    output(cmd, io, { id: route.id, address: route.address, deleted: true }, () => `Removed ${route.address}.`);
  });
}
