import type { Command } from 'commander';
import { PLANS } from '../services/workspaces.js';
import type { Plan } from '../store/workspaces.js';
import { toIso } from '../shared/clock.js';
import { validationError } from '../shared/errors.js';
import { output, table, withRuntime, type CliIo } from './io.js';

const positiveInt = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw validationError(name, 'must be a positive integer');
  return Number(value);
};

export function registerWorkspaceCommands(program: Command, io: CliIo): void {
  const workspaces = program.command('workspaces').description('workspaces: each has its own keys, domains and mail');
  workspaces
    .command('create <name>')
    .description('create a workspace')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const ws = await withRuntime(cmd, io, (rt) => rt.services.workspaces.create(name));
      output(
        cmd,
        io,
        { ...ws, created_at: toIso(ws.created_at) },
        () => `Created workspace "${ws.name}" (id ${ws.id}).`,
      );
    });
  workspaces
    .command('list')
    .description('list workspaces with their plan')
    .action(async (_opts: unknown, cmd: Command) => {
      const items = await withRuntime(cmd, io, (rt) => rt.services.workspaces.list());
      output(
        cmd,
        io,
        items.map((w) => ({ ...w, created_at: toIso(w.created_at) })),
        () =>
          table([
            ['ID', 'NAME', 'PLAN', 'TRANSACTIONAL/S', 'MARKETING/S', 'CREATED'],
            ...items.map((w) => [
              w.id,
              w.name,
              w.plan,
              String(w.transactional_per_second ?? '-'),
              String(w.marketing_per_second ?? '-'),
              toIso(w.created_at),
            ]),
          ]),
      );
    });
  workspaces
    .command('set-default-from <id> <address>')
    .description('the sender used when a legacy send has no from_email (must be on a verified domain at send time)')
    .action(async (id: string, address: string, _opts: unknown, cmd: Command) => {
      const ws = await withRuntime(cmd, io, (rt) => rt.services.workspaces.setDefaultFrom(id, address));
      output(
        cmd,
        io,
        { ...ws, created_at: toIso(ws.created_at) },
        () => `Workspace ${ws.id} sends as ${ws.default_from_email} by default.`,
      );
    });
  workspaces
    .command('set-branding <id>')
    .description('the name and logo contacts see on the preference centre (the page of every unsubscribe link)')
    .option('--name <name>', 'the workspace name shown')
    .option('--logo-url <url>', 'an https URL of the logo; "" removes it')
    .action(async (id: string, opts: { name?: string; logoUrl?: string }, cmd: Command) => {
      const ws = await withRuntime(cmd, io, (rt) =>
        rt.services.workspaces.setBranding(id, { name: opts.name, logoUrl: opts.logoUrl }),
      );
      output(
        cmd,
        io,
        { ...ws, created_at: toIso(ws.created_at) },
        () =>
          `Workspace ${ws.id} shows as "${ws.name}"${ws.logo_url ? ` with the logo ${ws.logo_url}` : ', without a logo'}.`,
      );
    });
  workspaces
    .command('set-plan <id> <plan>')
    .description(`set the plan (${PLANS.join(', ')}); enterprise takes custom rates`)
    .option(
      '--transactional <perSecond>',
      'enterprise: transactional sends per second (soft limit)',
      positiveInt('transactional'),
    )
    .option('--marketing <perSecond>', 'enterprise: marketing sends per second (hard limit)', positiveInt('marketing'))
    .action(async (id: string, plan: string, opts: { transactional?: number; marketing?: number }, cmd: Command) => {
      const ws = await withRuntime(cmd, io, (rt) =>
        rt.services.workspaces.setPlan(id, plan as Plan, {
          transactionalPerSecond: opts.transactional,
          marketingPerSecond: opts.marketing,
        }),
      );
      output(
        cmd,
        io,
        { ...ws, created_at: toIso(ws.created_at) },
        () => `Workspace ${ws.id} is on the ${ws.plan} plan.`,
      );
    });
}
