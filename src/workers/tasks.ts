import type { Logger } from '../shared/logger.js';
import { runAsLeader } from '../store/infra/leader-lock.js';
import type { Store } from '../store/infra/db.js';

/**
 * Periodic tasks (Postal's TASKS): jobs driven by time, not rows. A leader task runs on one
 * node at a time (PostgreSQL advisory lock; a single SQLite node is always the leader). A task
 * never overlaps itself, never keeps the process alive, and a stop waits for the runs in
 * progress.
 */
export interface Task {
  name: string;
  everyMs: number;
  /** One node at a time (retention, roll-ups, re-checks, the guard's evaluation). */
  leader: boolean;
  run(): Promise<unknown>;
}

interface Tasks {
  stop(): Promise<void>;
}

export function startTasks(tasks: readonly Task[], deps: { store: Store; logger: Logger }): Tasks {
  const log = deps.logger.child({ component: 'tasks' });
  const running = new Set<Promise<unknown>>();
  const timers = tasks.map((task) => {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      const p = (task.leader ? runAsLeader(deps.store, task.name, () => task.run()) : task.run())
        .catch((err: unknown) => log.error({ err, task: task.name }, 'periodic task failed'))
        .finally(() => {
          busy = false;
          running.delete(p);
        });
      running.add(p);
    }, task.everyMs);
    timer.unref();
    return timer;
  });
  return {
    async stop() {
      for (const t of timers) clearInterval(t);
      await Promise.allSettled([...running]);
    },
  };
}
