import type { Command } from 'commander';
import { output, withRuntime, type CliIo } from './io.js';

export function registerDashboardCommands(program: Command, io: CliIo): void {
  const dashboard = program.command('dashboard').description('the web dashboard at <http.publicUrl>/dashboard');
  dashboard
    .command('login')
    .description('print a one-time sign-in link for the dashboard (valid 15 minutes, works once)')
    .action(async (_opts: unknown, cmd: Command) => {
      const link = await withRuntime(cmd, io, (rt) => rt.services.dashboardAuth.createLoginLink());
      output(cmd, io, link, () => `Open this link to sign in (works once, until ${link.expires_at}):\n${link.url}`);
    });
}
