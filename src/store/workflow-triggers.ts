import type { Selectable } from 'kysely';
import type { Db, Dialect } from './infra/db.js';
import { claimRows, unleased, type Lease } from './lease.js';
import { flag, json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { WorkflowTriggersTable } from './tables/workflows.js';

const triggerRows = rowCodec<Selectable<WorkflowTriggersTable>>()({
  payload: json<Record<string, unknown>>(),
  test: flag,
});
/** An event that may start or resume runs of a contact, with its payload. */
export type WorkflowTrigger = EntityOf<typeof triggerRows>;

/**
 * The trigger outbox: events that may start or resume workflow runs. Rows are written in the
 * transaction of the state change (or the API request) they report, claimed with a lease by
 * a runner, and deleted in the transaction that starts their runs: a trigger is acted on
 * once, and a node killed mid-way leaves the row to be claimed again.
 */

export const saveWorkflowTrigger = async (db: Db, trigger: WorkflowTrigger): Promise<void> => {
  await db.insertInto('workflow_triggers').values(triggerRows.encode(trigger)).execute();
};

export const triggerContactKey = (workspaceId: string, email: string): string =>
  `${workspaceId}:${email.toLowerCase()}`;

/**
 * Leases up to `limit` triggers, oldest first, and only the oldest of each contact: a
 * contact's events are acted on in the order they came, one at a time, whichever node takes
 * them (an event a run waits for must not overtake the one that starts the run). SKIP LOCKED
 * on PostgreSQL, so nodes take disjoint rows.
 */
export async function claimWorkflowTriggers(
  db: Db,
  dialect: Dialect,
  lease: Lease,
  limit: number,
): Promise<WorkflowTrigger[]> {
  const pick = db
    .selectFrom('workflow_triggers as t')
    .select('t.id')
    .where(unleased(lease.now, 't.lease_until'))
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('workflow_triggers as older')
            .select('older.id')
            .whereRef('older.contact_key', '=', 't.contact_key')
            .whereRef('older.id', '<', 't.id'),
        ),
      ),
    )
    .orderBy('t.id')
    .limit(limit);
  const rows = triggerRows.decodeAll(await claimRows(db, dialect, 'workflow_triggers', lease, pick, { lockOf: 't' }));
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Deletes a trigger this owner holds; false when the lease was lost (another node has it). */
export const removeLeasedWorkflowTrigger = async (db: Db, id: string, owner: string): Promise<boolean> =>
  Number(
    (await db.deleteFrom('workflow_triggers').where('id', '=', id).where('lease_owner', '=', owner).executeTakeFirst())
      .numDeletedRows,
  ) > 0;
