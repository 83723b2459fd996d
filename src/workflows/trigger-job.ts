import type { Config } from '../config/schema.js';
import type { Clock } from '../shared/clock.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import type { Db, Dialect } from '../store/infra/db.js';
import { claimWorkflowTriggers, type WorkflowTrigger } from '../store/workflow-triggers.js';
import type { SubscriberService } from '../services/marketing/subscribers.js';
import type { Hand, Next, WorkerJob } from '../workers/kernel.js';
import type { DefinitionCache } from './definition-cache.js';
import { createRunStarter } from './start-runs.js';

interface TriggerJobDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  settings: Config['workflows'];
  subscribers: SubscriberService;
  batcher: CommitBatcher;
  definitions: DefinitionCache;
}

/** Triggers claimed at a time. */
const TRIGGER_BATCH = 50;

/**
 * The trigger outbox, a job on the worker kernel: `recordEvent` writes a row here in the
 * event's transaction when a workflow listens for it (and `POST /v1/events/send` for custom
 * events); this job claims them and, for each, resumes the runs waiting for the event and
 * starts the runs it triggers, deleting the trigger in that transaction (start-runs.ts). A
 * claim holds at most one trigger per contact, so its triggers are consumed side by side.
 */
export function triggerJob(hand: Hand, deps: TriggerJobDeps): WorkerJob {
  const { db, dialect, settings } = deps;
  const starter = createRunStarter({
    db,
    clock: deps.clock,
    subscribers: deps.subscribers,
    definitions: deps.definitions,
    batcher: deps.batcher,
  });

  async function consume(trigger: WorkflowTrigger): Promise<void> {
    try {
      const result = await starter.consume(trigger, hand.owner);
      if (result && result.started + result.resumed > 0)
        hand.log.debug({ triggerId: trigger.id, event: trigger.event_name, ...result }, 'workflow trigger consumed');
    } catch (err) {
      // Left in hand: given back at a stop, or claimed again when its lease runs out.
      hand.log.error(
        { err, triggerId: trigger.id, event: trigger.event_name },
        'workflow trigger could not be consumed',
      );
      return;
    }
    hand.settle([trigger.id]);
  }

  return {
    table: 'workflow_triggers',
    wakeOn: ['workflow_triggers'],
    leaseMs: settings.leaseSeconds * 1000,
    graceMs: 30_000,
    async pass(): Promise<Next> {
      const triggers = await claimWorkflowTriggers(db, dialect, hand.lease(), TRIGGER_BATCH);
      hand.hold(triggers.map((t) => t.id));
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(settings.concurrency, triggers.length) }, async () => {
          while (next < triggers.length && !hand.stopping) await consume(triggers[next++]!);
        }),
      );
      // Stopping: the triggers not consumed stay in hand, and the kernel gives them back.
      return triggers.length === TRIGGER_BATCH ? 'again' : { sleep: settings.pollInterval, onWork: 'now' };
    },
    halt: () => [],
  };
}
