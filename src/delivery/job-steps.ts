import type { Clock } from '../shared/clock.js';
import { domainOf } from '../shared/domain-name.js';
import type { Logger } from '../shared/logger.js';
import type { Email, QueueItem } from '../store/emails.js';
import type { Suppression } from '../store/suppressions.js';
import { transmitJob, type Job, type JobContext } from './transmit-job.js';
import type { DomainLimiter } from './domain-limiter.js';
import type { DeliveryGate } from './gate.js';
import type { Outcome, RecipientResult } from './outcome.js';
import { isSimulated, simulate } from './simulator.js';
import type { Source } from './source-address.js';

/** Where a job goes as the gate sees it: its key (group and source address), and that group's connection limit. */
export interface Destination {
  key: string;
  source: Source;
  group: string;
  messagesPerConnection?: number | undefined;
  /**
   * The source address is in warm-up: the job's share of today's cap is taken only once it has
   * a slot (a job that waits holds none of it), and what was not sent is given back.
   */
  warmup?: WarmupShare | undefined;
}

export interface WarmupShare {
  /** Counts the job's recipients against the cap, if they still fit (other jobs and nodes count too). */
  reserve(): Promise<boolean>;
  giveBack(n: number): Promise<void>;
}

export interface JobStepsContext {
  clock: Clock;
  /** Suppression entries covering the claimed batch's recipients. */
  suppressions: Suppression[];
  gate: DeliveryGate;
  limiter: DomainLimiter;
  context: JobContext;
  log: Logger;
  /** The stop's grace ran out: transactions cut off have no outcome to record. */
  abandoning(): boolean;
  record(results: RecipientResult[]): Promise<void>;
  release(items: QueueItem[], dueAt: number, note?: string): Promise<void>;
  /** The job's destination: the source address its connection comes from (one of its IP pool's) and the group whose limits apply. */
  destinationOf(job: Job, recipients: number): Promise<Destination | { wait: number; reason: string }>;
}

const suppressionOf = (item: QueueItem, email: Email, entries: Suppression[]): Suppression | undefined => {
  const address = item.recipient.toLowerCase();
  const domain = `@${domainOf(address)}`;
  return entries.find(
    (s) =>
      s.workspace_id === item.workspace_id &&
      (s.address === address || s.address === domain) &&
      (s.scope === 'all' || email.type === 'marketing'),
  );
};

/**
 * One job (a message, the recipients it has at one domain) as a list of named steps (Postal's
 * outgoing message processor): hold if suppressed, simulate if a test, wait for a slot,
 * transmit (route, sign, send over SMTP: transmit-job.ts), record. A step may end the job with an
 * outcome for each recipient.
 */
export async function runJobSteps(job: Job, p: JobStepsContext): Promise<void> {
  const { clock } = p;
  const startedAt = clock.now();
  const results: RecipientResult[] = [];
  const result = (item: QueueItem, outcome: Outcome, start = startedAt) =>
    results.push({ email: job.email, item, outcome, startedAt: start, durationMs: clock.now() - start });

  // Hold: a suppressed address is never sent to.
  const toSend: QueueItem[] = [];
  for (const item of job.items) {
    const entry = suppressionOf(item, job.email, p.suppressions);
    if (entry) result(item, { kind: 'suppressed', entry });
    else toSend.push(item);
  }
  if (toSend.length === 0) return p.record(results);

  // Simulate: test keys and simulator addresses never open a connection.
  if (isSimulated(job.email.test, job.domain)) {
    for (const item of toSend) {
      const outcome = simulate(item.recipient, item.attempts, clock.now());
      result(
        item,
        outcome.kind === 'suppressed'
          ? { kind: 'suppressed', entry: { ...outcome.entry, workspace_id: item.workspace_id } }
          : outcome,
      );
    }
    return p.record(results);
  }

  let destination: Destination | { wait: number; reason: string };
  try {
    destination = await p.destinationOf(job, toSend.length);
  } catch (err) {
    // The pools could not be read: the rows go back, never out through another address.
    p.log.error({ err, emailId: job.email.id }, 'could not choose the source address');
    await p.record(results);
    return p.release(
      toSend,
      clock.now() + 1000,
      'could not choose the source address (IP pools, warm-up): retried shortly',
    );
  }
  if ('wait' in destination) {
    // Every address of its pool is at today's warm-up cap: the rows wait, without an attempt.
    await p.record(results);
    return p.release(toSend, destination.wait, destination.reason);
  }

  const { key, source, group, messagesPerConnection } = destination;
  const from = source.address ? `from ${source.address}` : 'from the system address';

  // Wait for a slot: the node's concurrency and the destination's limits.
  const slot = await p.gate.acquire(
    key,
    toSend.map((i) => i.id),
  );
  if (slot !== 'go') {
    await p.record(results);
    // Stopping: the kernel has given the rows back already.
    if (slot === 'stopping') return;
    // Backed off, not failed: the rows wait, without an attempt, until the pause ends.
    const until = p.limiter.pausedUntil(key) || clock.now();
    const why = group === job.domain ? job.domain : `${group} (${job.domain})`;
    return p.release(
      toSend,
      until,
      `${why} asked us to slow down ${from}: its mail waits until ${new Date(until).toISOString()}`,
    );
  }

  // Warm-up: the cap is counted once the job may go, never while it waits (paused, stopping).
  if (destination.warmup) {
    let fits: boolean;
    try {
      fits = await destination.warmup.reserve();
    } catch (err) {
      p.gate.release(key, 'neutral');
      p.log.error({ err, emailId: job.email.id }, 'could not count the warm-up cap');
      await p.record(results);
      return p.release(toSend, clock.now() + 1000, 'could not count the warm-up cap: retried shortly');
    }
    if (!fits) {
      // Another job or node took today's room since the address was chosen: the rows wait as
      // the choice made now says (for tomorrow, when no address of the pool has room).
      p.gate.release(key, 'neutral');
      await p.record(results);
      const again = await p.destinationOf(job, toSend.length).catch(() => undefined);
      if (again && 'wait' in again) return p.release(toSend, again.wait, again.reason);
      return p.release(
        toSend,
        clock.now(),
        `IP warm-up: today's room ${from} was taken meanwhile: the address is chosen again`,
      );
    }
  }

  const sendStart = clock.now();
  let outcomes: Outcome[];
  try {
    outcomes = await transmitJob({ ...job, items: toSend, source, messagesPerConnection }, p.context);
  } catch (err) {
    p.log.error({ err, emailId: job.email.id }, 'delivery step failed');
    outcomes = toSend.map(() => ({
      kind: 'deferred',
      code: null,
      response: `internal error: ${(err as Error).message}`,
      category: 'other',
      mxHost: null,
      tls: false,
    }));
  } finally {
    // Given back on every path: a slot that is never released stops its destination for good.
    p.gate.release(key, slotResult(outcomes!), slowDownReply(outcomes!));
  }
  // What was not sent (deferred, failed, cut off) does not count against the day's cap.
  const unsent = outcomes.filter((o) => o.kind !== 'delivered' && o.kind !== 'bounced').length;
  if (destination.warmup && unsent > 0) {
    await destination.warmup
      .giveBack(unsent)
      .catch((err: unknown) => p.log.warn({ err, emailId: job.email.id }, 'could not give back warm-up cap'));
  }
  const throttled = outcomes.some((o) => o.kind === 'deferred' && o.slowDown);
  if (throttled)
    p.log.warn(
      {
        domain: job.domain,
        destination: group,
        source: source.address,
        pausedUntil: new Date(p.limiter.pausedUntil(key)).toISOString(),
      },
      'destination throttles us: slowing down',
    );

  toSend.forEach((item, i) => {
    const outcome = outcomes[i]!;
    // Cut off by the stop: the outcome is unknown, so the row goes back without an attempt (the kernel gives it back).
    if (p.abandoning() && outcome.kind === 'deferred' && ['network', 'timeout', 'other'].includes(outcome.category))
      return;
    result(item, outcome, sendStart);
  });
  await p.record(results);
}

/** The slow-down reply among the outcomes, for the destination's state. */
function slowDownReply(outcomes: Outcome[] | undefined): string | undefined {
  const o = outcomes?.find((x) => x.kind === 'deferred' && x.slowDown);
  return o && 'response' in o ? o.response : undefined;
}

/** How the destination answered, for its limiter: a slow-down reply, an accepted message, or neither. */
function slotResult(outcomes: Outcome[] | undefined): 'ok' | 'throttled' | 'neutral' {
  if (!outcomes) return 'neutral';
  if (outcomes.some((o) => o.kind === 'deferred' && o.slowDown)) return 'throttled';
  return outcomes.some((o) => o.kind === 'delivered') ? 'ok' : 'neutral';
}
