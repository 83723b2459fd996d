import { runImport, type RunImportDeps } from '../services/marketing/contact-imports/run-import.js';
import { claimContactImport } from '../store/contact-imports.js';
import type { Dialect } from '../store/infra/db.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';

interface ImportJobDeps extends RunImportDeps {
  dialect: Dialect;
  /** How often to look for an import whose holder's lease ran out (new imports wake the job at once). */
  pollMs: number;
}

/** An import is leased this long, renewed by the kernel while it runs and by every batch it commits. */
const LEASE_MS = 15_000;

/**
 * Contact imports, a job on the worker kernel: claims one waiting import at a time (they share
 * the database with live traffic) and runs it (services/marketing/contact-imports/run-import.ts). An
 * import whose node died is claimed again by any node once its lease runs out, and resumes
 * after the last batch that node committed; one a stop interrupted is given back at once.
 */
export function importJob(hand: Hand, deps: ImportJobDeps): WorkerJob {
  let running = false;

  const run = (row: Awaited<ReturnType<typeof claimContactImport>> & object) =>
    hand.run(async () => {
      let end: Awaited<ReturnType<typeof runImport>> | 'fault' = 'fault';
      try {
        end = await runImport(deps, row, { owner: hand.owner, leaseMs: LEASE_MS, stopping: () => hand.stopping });
        hand.log.info({ importId: row.id, workspaceId: row.workspace_id, end }, 'contact import ended');
      } finally {
        // Stopped: kept in hand, so the stop gives it back at once. A storage fault: let go; its
        // lease runs out and any node (this one too) takes it up again from its cursor.
        if (end !== 'stopped') hand.settle([row.id]);
        running = false;
        hand.wake();
      }
    });

  return {
    table: 'contact_imports',
    wakeOn: ['contact_imports'],
    leaseMs: LEASE_MS,
    graceMs: 10_000,
    async pass(): Promise<Next> {
      if (running || hand.stopping) return { sleep: deps.pollMs, onWork: 'ignore' };
      const row = await claimContactImport(deps.db, deps.dialect, hand.lease());
      if (!row) return { sleep: deps.pollMs, onWork: 'now' };
      hand.hold([row.id]);
      running = true;
      run(row);
      return { sleep: deps.pollMs, onWork: 'ignore' };
    },
    halt: () => [],
  };
}
