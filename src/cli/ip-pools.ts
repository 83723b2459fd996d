import type { Command } from 'commander';
import type { IpPoolView, WarmupView } from '../services/ip-pools.js';
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
  cmd.option(
    '--address <address>',
    'a source address of the pool (repeat for more)',
    (value: string, previous: AddressOption[] = []) => [...previous, { address: value }],
  );
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

const warmupText = (w: WarmupView | null): string =>
  w === null
    ? 'warm'
    : `day ${w.day} of ${w.schedule.length}: ${w.cap}/provider today${w.sent_today.length > 0 ? ` (sent ${w.sent_today.map((s) => `${s.provider} ${s.count}`).join(', ')})` : ''}`;

const text = (p: IpPoolView) =>
  `${p.name} (id ${p.id}): ${p.addresses.map((a) => `${a.address} as ${a.ehlo}`).join(', ')}`;

export function registerIpPoolCommands(program: Command, io: CliIo): void {
  const pools = program
    .command('ip-pools')
    .description('IP pools: the source addresses mail leaves from, each with its EHLO name (docs/deliverability.md)');

  addressOptions(
    pools.command('create <name>').description('create a pool: --address ADDR [--ehlo NAME] for each address'),
  ).action(async (name: string, opts: { address?: AddressOption[] }, cmd: Command) => {
    const pool = await withRuntime(cmd, io, (rt) =>
      rt.services.ipPools.create({ name, addresses: opts.address ?? [] }),
    );
    output(
      cmd,
      io,
      pool,
      () => `Created IP pool ${text(pool)}.\nCheck that this host can send from each address: mailsvc doctor`,
    );
  });

  addressOptions(
    pools
      .command('update <pool>')
      .description('rename a pool (--name) or replace its addresses (--address ADDR [--ehlo NAME] …)'),
  )
    .option('--name <name>', 'the new name')
    .action(async (id: string, opts: { address?: AddressOption[]; name?: string }, cmd: Command) => {
      const pool = await withRuntime(cmd, io, (rt) =>
        rt.services.ipPools.update(id, { name: opts.name, addresses: opts.address }),
      );
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
          : table([
              ['POOL', 'ID', 'ADDRESS', 'EHLO', 'WARM-UP'],
              ...items.flatMap((p) =>
                p.addresses.map((a, i) => [
                  i === 0 ? p.name : '',
                  i === 0 ? p.id : '',
                  a.address,
                  a.ehlo,
                  warmupText(a.warmup),
                ]),
              ),
            ]),
      );
    });

  pools
    .command('warmup <address>')
    .description(
      "put an address of a pool in warm-up from day 1: each day at most the day's cap per provider (default: delivery.warmup, 50 doubling to the target); --stop ends it",
    )
    .option('--schedule <caps>', 'daily caps, comma-separated, e.g. 50,100,200,400')
    .option('--stop', 'end the warm-up: the address sends as a warm one')
    .action(async (address: string, opts: { schedule?: string; stop?: boolean }, cmd: Command) => {
      const schedule = opts.schedule?.split(',').map((s) => {
        if (!/^\d+$/.test(s.trim())) throw validationError('schedule', `"${s}" is not a whole number`);
        return Number(s.trim());
      });
      if (opts.stop) {
        const stopped = await withRuntime(cmd, io, (rt) => rt.services.ipPools.stopWarmup(address));
        return output(cmd, io, stopped, () => `${stopped.address} is warm: its warm-up ended.`);
      }
      const w = await withRuntime(cmd, io, (rt) => rt.services.ipPools.startWarmup(address, schedule));
      output(
        cmd,
        io,
        w,
        () =>
          `${w.address} warms up: ${w.schedule.join(', ')} messages per provider on days 1 to ${w.schedule.length} (today: ${w.cap}); next day at ${w.next_day_at}.`,
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
    .description(
      'the pool of a workspace\'s mail, or with --domain of one sending domain\'s ("default": the system address)',
    )
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .option('--domain <domain>', 'only mail from this sending domain')
    .action(async (pool: string, opts: { workspace?: string; domain?: string }, cmd: Command) => {
      const result = await withRuntime(cmd, io, async (rt) => {
        const workspaceId = await workspaceOf(rt, opts.workspace);
        return opts.domain
          ? rt.services.ipPools.setDomainPool(workspaceId, opts.domain, pool)
          : rt.services.ipPools.setWorkspacePool(workspaceId, pool);
      });
      output(
        cmd,
        io,
        result,
        () =>
          `Mail ${opts.domain ? `from ${opts.domain}` : 'of the workspace'} leaves through ${pool === 'default' ? 'the system address' : `IP pool ${pool}`} unless a message names its own pool.`,
      );
    });
}
