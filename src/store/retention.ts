import type { Db } from './infra/db.js';

// Deletes go in batches so a first clean-up of a large, old installation never holds long
// locks that would stall intake on the same tables.
const BATCH = 5000;

async function deleteInBatches(run: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await run();
    total += n;
    if (n < BATCH) return total;
  }
}

export const deleteAttemptsBefore = (db: Db, cutoff: number): Promise<number> =>
  deleteInBatches(async () => {
    const r = await db
      .deleteFrom('delivery_attempts')
      .where('id', 'in', (eb) =>
        eb.selectFrom('delivery_attempts').select('id').where('started_at', '<', cutoff).limit(BATCH),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });

/** Webhook deliveries and their attempts go with their event (ON DELETE CASCADE). */
export const deleteEventsBefore = (db: Db, cutoff: number): Promise<number> =>
  deleteInBatches(async () => {
    const r = await db
      .deleteFrom('events')
      .where('id', 'in', (eb) => eb.selectFrom('events').select('id').where('created_at', '<', cutoff).limit(BATCH))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });

/** Received messages with their content (ON DELETE CASCADE). */
export const deleteReceivedEmailsBefore = (db: Db, cutoff: number): Promise<number> =>
  deleteInBatches(async () => {
    const r = await db
      .deleteFrom('received_emails')
      .where('id', 'in', (eb) =>
        eb.selectFrom('received_emails').select('id').where('created_at', '<', cutoff).limit(BATCH),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });

/** Keys created before `cutoff`, except a claim still in flight (its request is running). */
export async function deleteIdempotencyKeysBefore(db: Db, cutoff: number, now: number): Promise<number> {
  const r = await db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', cutoff)
    .where((eb) => eb.or([eb('state', '=', 'done'), eb('locked_until', '<', now)]))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Finished workflow runs with their steps (ON DELETE CASCADE); running ones stay, however old. */
export const deleteWorkflowRunsBefore = (db: Db, cutoff: number): Promise<number> =>
  deleteInBatches(async () => {
    const r = await db
      .deleteFrom('workflow_runs')
      .where('id', 'in', (eb) =>
        eb.selectFrom('workflow_runs').select('id').where('completed_at', '<', cutoff).limit(BATCH),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });

/** API request logs (Resend's logs) older than `cutoff`. */
export const deleteApiLogsBefore = (db: Db, cutoff: number): Promise<number> =>
  deleteInBatches(async () => {
    const r = await db
      .deleteFrom('api_logs')
      .where('id', 'in', (eb) => eb.selectFrom('api_logs').select('id').where('created_at', '<', cutoff).limit(BATCH))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  });
