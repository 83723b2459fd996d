import type { Command } from 'commander';
import { doctorFails, runDoctor } from '../checks/doctor.js';
import { CliExit, output, withRuntime, type CliIo } from './io.js';

export function registerDoctorCommands(program: Command, io: CliIo): void {
  program
    .command('doctor')
    .description(
      'check the installation as receiving mail servers see it: host name, forward and reverse DNS, TLS certificate, blocklists, clock, disk, domains; exit 1 on failures',
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const checks = await withRuntime(cmd, io, (rt) =>
        runDoctor({ config: rt.config, resolver: rt.deps.resolver, db: rt.store.db, now: () => rt.deps.clock.now() }),
      );
      const failing = checks.filter(doctorFails);
      const warnings = checks.filter((c) => !doctorFails(c) && c.status !== 'ok');
      output(cmd, io, { ok: failing.length === 0, checks }, () => {
        const width = Math.max(...checks.map((c) => c.name.length));
        const lines = checks.flatMap((c) => [
          `${c.status.padEnd(13)} ${c.name.padEnd(width)}  ${c.message}`,
          ...(c.fix && c.status !== 'ok' ? [`${' '.repeat(16 + width)}fix: ${c.fix}`] : []),
        ]);
        const summary =
          failing.length === 0
            ? `Nothing failing${warnings.length > 0 ? `; ${warnings.length} warning(s) to look at` : ''}.`
            : `${failing.length} check(s) failing${warnings.length > 0 ? `, ${warnings.length} warning(s)` : ''}: fix them before your first campaign.`;
        return [...lines, '', summary].join('\n');
      });
      if (failing.length > 0) throw new CliExit(1);
    });
}
