import type { Command } from 'commander';
import type { ReputationView } from '../services/deliverability/reputation-rule.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const row = (r: ReputationView) => [
  r.domain_name,
  r.state,
  `${r.bounce.rate}%`,
  `${r.complaint.rate}%`,
  String(r.sent),
  String(r.held),
  r.reason,
];

export function registerReputationCommands(program: Command, io: CliIo): void {
  const reputation = program
    .command('reputation')
    .description("the reputation guard: sending domains' bounce and complaint rates; resume a paused domain");
  const ws = (c: Command) => c.option('--workspace <id>', 'workspace (default: the default workspace)');

  ws(reputation.command('list').description('every sending domain: state, rates over the window, held mail')).action(
    async (opts: { workspace?: string }, cmd: Command) => {
      const items = await withRuntime(cmd, io, async (rt) =>
        rt.services.reputation.list(await workspaceOf(rt, opts.workspace)),
      );
      output(cmd, io, items, () =>
        items.length === 0
          ? 'No domains.'
          : table([['DOMAIN', 'STATE', 'BOUNCES', 'COMPLAINTS', 'SENT', 'HELD', 'WHY'], ...items.map(row)]),
      );
    },
  );

  ws(
    reputation
      .command('resume <domain>')
      .description("release a paused domain's held marketing mail; its rates count from now on"),
  ).action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
    const result = await withRuntime(cmd, io, async (rt) =>
      rt.services.reputation.resume(await workspaceOf(rt, opts.workspace), name),
    );
    output(
      cmd,
      io,
      result,
      () => `${result.domain_name}: sending again; ${result.released} held recipient(s) released to the queue.`,
    );
  });
}
