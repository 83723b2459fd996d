import { recordEvents } from '../../events/record-event.js';
import { isAppError } from '../../shared/errors.js';
import { checkTypedValues, type FieldSchema, type FieldType } from '../../shared/typed-fields.js';
import { requireAddress } from '../../messages/addresses.js';
import { listAllContactProperties } from '../../store/contact-properties.js';
import type { Db } from '../../store/infra/db.js';
import {
  listSubscribersByEmailKeys,
  listTagsOf,
  saveSubscribers,
  updateSubscriber,
  type Subscriber,
  type SubscriberStatus,
} from '../../store/subscribers.js';
import { saveSuppressionIfAbsent } from '../../store/suppressions.js';
import type { ServiceDeps } from '../deps.js';
import {
  applyStatus,
  checkName,
  eventDataOf,
  mergedMetadata,
  newSubscriber,
  type ImportOutcome,
  type SubscriberInput,
} from './subscriber-rows.js';

/**
 * Many subscribers in one transaction (a contact import's batch): each line checked as an
 * upsert's, a bad one failed at its index; then every line planned against the contacts known
 * (and the lines before it), and the plan written: new rows together, changed rows one by one,
 * their opt-outs, events and status changes.
 */

export interface BatchOptions {
  onConflict: 'upsert' | 'skip';
  source?: string | undefined;
  /** Runs in the batch's transaction with the lines written (topic choices, the import's progress). */
  after?: (trx: Db, written: Array<{ index: number; id: string }>, outcomes: readonly ImportOutcome[]) => Promise<void>;
}

interface Line {
  index: number;
  email: string;
  input: SubscriberInput;
}

/** What the batch will write. */
interface Plan {
  /** Rows new to the workspace, by address; a later line of the same address changes the pending row. */
  fresh: Map<string, Subscriber>;
  /** Known rows as the lines leave them, by address. */
  changed: Map<string, Subscriber>;
  statusChanges: Array<{ row: Subscriber; status: SubscriberStatus }>;
  written: Array<{ index: number; id: string }>;
}

const OPT_OUT = 'unsubscribed in a contact import';

export async function importSubscriberBatch(
  deps: ServiceDeps,
  workspaceId: string,
  inputs: readonly SubscriberInput[],
  options: BatchOptions,
): Promise<ImportOutcome[]> {
  const { db, clock } = deps;
  const outcomes: ImportOutcome[] = new Array(inputs.length);
  const fail = (index: number, err: unknown) => {
    if (!isAppError(err)) throw err;
    outcomes[index] = { outcome: 'failed', reason: err.message };
  };
  const lines = checkLines(await propertySchema(db, workspaceId), inputs, fail);
  await db.transaction().execute(async (trx) => {
    const now = clock.now();
    const known = new Map(
      (await listSubscribersByEmailKeys(trx, workspaceId, [...new Set(lines.map((l) => l.email.toLowerCase()))])).map(
        (row) => [row.email_key, row],
      ),
    );
    const plan = planLines(lines, known, outcomes, fail, {
      workspaceId,
      source: options.source ?? 'import',
      onConflict: options.onConflict,
      now,
    });
    await writePlan(trx, plan, known, now);
    if (options.after) await options.after(trx, plan.written, outcomes);
  });
  return outcomes;
}

/** Declared contact properties and their types, as an import checks them. */
async function propertySchema(db: Db, workspaceId: string): Promise<FieldSchema> {
  const declared = await listAllContactProperties(db, workspaceId);
  return Object.fromEntries(declared.map((p) => [p.key, p.type as FieldType]));
}

function checkLines(
  schema: FieldSchema,
  inputs: readonly SubscriberInput[],
  fail: (index: number, err: unknown) => void,
): Line[] {
  const lines: Line[] = [];
  for (const [index, input] of inputs.entries()) {
    try {
      const email = requireAddress('email', input.email);
      checkName('first_name', input.first_name);
      checkName('last_name', input.last_name);
      if (input.properties) checkTypedValues('properties', schema, input.properties);
      lines.push({ index, email, input });
    } catch (err) {
      fail(index, err);
    }
  }
  return lines;
}

function planLines(
  lines: readonly Line[],
  known: ReadonlyMap<string, Subscriber>,
  outcomes: ImportOutcome[],
  fail: (index: number, err: unknown) => void,
  batch: { workspaceId: string; source: string; onConflict: BatchOptions['onConflict']; now: number },
): Plan {
  const plan: Plan = { fresh: new Map(), changed: new Map(), statusChanges: [], written: [] };
  const { now } = batch;
  for (const { index, email, input } of lines) {
    const key = email.toLowerCase();
    try {
      const pending = plan.fresh.get(key);
      const existing = pending ?? plan.changed.get(key) ?? known.get(key);
      if (existing && !pending && batch.onConflict === 'skip') {
        outcomes[index] = { outcome: 'skipped', id: existing.id };
        continue;
      }
      const metadata = mergedMetadata(existing?.metadata ?? null, input.properties);
      const row: Subscriber = {
        ...(existing ?? newSubscriber(batch.workspaceId, email, batch.source, now)),
        ...(input.first_name !== undefined ? { first_name: input.first_name } : {}),
        ...(input.last_name !== undefined ? { last_name: input.last_name } : {}),
        ...(metadata !== undefined ? { metadata } : {}),
        updated_at: now,
      };
      if (!existing || pending) {
        if (input.status !== undefined)
          Object.assign(row, { status: input.status, unsubscribed_at: input.status === 'unsubscribed' ? now : null });
        plan.fresh.set(key, row);
      } else {
        plan.changed.set(key, row);
        if (input.status !== undefined && input.status !== row.status)
          plan.statusChanges.push({ row, status: input.status });
      }
      // A second line of an address new in this batch updates what the first created.
      outcomes[index] = { outcome: existing ? 'updated' : 'created', id: row.id };
      plan.written.push({ index, id: row.id });
    } catch (err) {
      fail(index, err);
    }
  }
  return plan;
}

/** Whether a line changed what the contact had: its properties compared as stored, as JSON. */
const edited = (row: Subscriber, before: Subscriber) =>
  row.first_name !== before.first_name ||
  row.last_name !== before.last_name ||
  JSON.stringify(row.metadata) !== JSON.stringify(before.metadata);

async function writePlan(trx: Db, plan: Plan, known: ReadonlyMap<string, Subscriber>, now: number): Promise<void> {
  const inserts = [...plan.fresh.values()];
  await saveSubscribers(trx, inserts);
  const updates = [...plan.changed.values()].filter((row) => edited(row, known.get(row.email_key)!));
  for (const row of updates)
    await updateSubscriber(trx, row.id, {
      first_name: row.first_name,
      last_name: row.last_name,
      metadata: row.metadata,
      updated_at: now,
    });
  for (const row of inserts.filter((r) => r.status === 'unsubscribed')) {
    await saveSuppressionIfAbsent(trx, {
      workspace_id: row.workspace_id,
      address: row.email_key,
      scope: 'marketing',
      reason: 'unsubscribe',
      detail: OPT_OUT,
      email_id: null,
      created_at: now,
    });
  }
  const tags = await listTagsOf(
    trx,
    updates.map((r) => r.id),
  );
  await recordEvents(trx, [
    ...inserts.map((r) => ({
      workspaceId: r.workspace_id,
      type: 'subscriber.created' as const,
      at: now,
      data: eventDataOf(r, []),
    })),
    ...updates.map((r) => ({
      workspaceId: r.workspace_id,
      type: 'subscriber.updated' as const,
      at: now,
      data: eventDataOf(r, tags.get(r.id) ?? []),
    })),
  ]);
  for (const { row, status } of plan.statusChanges) await applyStatus(trx, row, status, now, OPT_OUT);
}
