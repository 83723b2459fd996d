import type { Command } from 'commander';
import type { IpPoolView } from '../services/ip-pools.js';
import { validationError } from '../shared/errors.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

interface AddressOption {
  address: string;
  ehlo?: string;
}

/**
 * `--address ADDR [--ehlo NAME] …`: each --ehlo names the address given just before it, so
 * the options are read in order (an address without one greets as delivery.hostname).
 */
function addressOptions(cmd: Command): Command {
  cmd.option('--address <address>', 'a source address of the pool (repeat for more)', (value: string, previous: AddressOption[] = []) => [...previous, { address: value }]);
  cmd.option('--ehlo <name>', 'the EHLO name of the --address before it (its PTR name; default: delivery.hostname)');
  cmd.on('option:ehlo', (name: string) => {
    const list = cmd.getOptionValue('address') as AddressOption[] | undefined;
    const last = list?.[list.length - 1];
    if (!last) throw validationError('ehlo', '--ehlo names the EHLO of the --address before it: give --address first');
    if (last.ehlo !== undefined) throw validationError('ehlo', `${last.address} has two --ehlo names`);
    last.ehlo = name;
  });
  return cmd;
}

const text = (p: IpPoolView) => `${p.name} (id ${p.id}): ${p.addresses.map((a) => `${a.address} as ${a.ehlo}`).join(', ')}`;

export function registerIpPoolCommands(program: Command, io: CliIo): void {
  const pools = program.command('ip-pools').description('IP pools: the source addresses mail leaves from, each with its EHLO name (docs/deliverability.md)');

  addressOptions(pools.command('create <name>').description('create a pool: --address ADDR [--ehlo NAME] for each address')).action(
    async (name: string, opts: { address?: AddressOption[] }, cmd: Command) => {
      const pool = await withRuntime(cmd, io, (rt) => rt.services.ipPools.create({ name, addresses: opts.address ?? [] }));
      output(cmd, io, pool, () => `Created IP pool ${text(pool)}.\nCheck that this host can send from each address: mailsvc doctor`);
    },
  );

  addressOptions(pools.command('update <pool>').description('rename a pool (--name) or replace its addresses (--address ADDR [--ehlo NAME] …)'))
    .option('--name <name>', 'the new name')
    .action(async (id: string, opts: { address?: AddressOption[]; name?: string }, cmd: Command) => {
      const pool = await withRuntime(cmd, io, (rt) => rt.services.ipPools.update(id, { name: opts.name, addresses: opts.address }));
      output(cmd, io, pool, () => `Updated IP pool ${text(pool)}.`);
    });

  pools
    .command('list')
    .description('list pools with their addresses and EHLO names')
    .action(async (_opts: unknown, cmd: Command) => {
      const items = await withRuntime(cmd, io, (rt) => rt.services.ipPools.list());
      output(cmd, io, items, () =>
        items.length === 0
          ? 'No IP pools: mail leaves from the system address (delivery.hostname).'
          : table([['POOL', 'ID', 'ADDRESS', 'EHLO'], ...items.flatMap((p) => p.addresses.map((a, i) => [i === 0 ? p.name : '', i === 0 ? p.id : '', a.address, a.ehlo]))]),
      );
    });

  pools
    .command('delete <pool>')
    .description('delete a pool (refused while a domain or workspace names it, or mail waits for it)')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const pool = await withRuntime(cmd, io, (rt) => rt.services.ipPools.remove(id));
      output(cmd, io, { ...pool, deleted: true }, () => `Deleted IP pool ${pool.name}.`);
    });

  pools
    .command('use <pool>')
    .description('the pool of a workspace\'s mail, or with --domain of one sending domain\'s ("default": the system address)')
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .option('--domain <domain>', 'only mail from this sending domain')
    .action(async (pool: string, opts: { workspace?: string; domain?: string }, cmd: Command) => {
      const result = await withRuntime(cmd, io, async (rt) => {
        const workspaceId = await workspaceOf(rt, opts.workspace);
        return opts.domain ? rt.services.ipPools.setDomainPool(workspaceId, opts.domain, pool) : rt.services.ipPools.setWorkspacePool(workspaceId, pool);
      });
      output(cmd, io, result, () => `Mail ${opts.domain ? `from ${opts.domain}` : 'of the workspace'} leaves through ${pool === 'default' ? 'the system address' : `IP pool ${pool}`} unless a message names its own pool.`);
    });
}
