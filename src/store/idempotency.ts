import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { IdempotencyKeysTable } from './tables/requests.js';

const recordRows = rowCodec<Selectable<IdempotencyKeysTable>>()({ response_body: jsonOrNull<unknown>() });
/** A key's claim and, once done, the response it answered (its body decoded). */
type IdempotencyRecord = Omit<EntityOf<typeof recordRows>, 'workspace_id' | 'key'>;

/** Inserts an in-flight claim; false when the key already has a row (the unique key decides races). */
export async function insertIdempotencyClaim(
  db: Db,
  workspaceId: string,
  key: string,
  requestHash: string,
  now: number,
  lockedUntil: number,
): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values({
      workspace_id: workspaceId,
      key,
      request_hash: requestHash,
      state: 'in_flight',
      response_status: null,
      response_body: null,
      created_at: now,
      locked_until: lockedUntil,
    })
    .onConflict((oc) => oc.columns(['workspace_id', 'key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export const findIdempotencyRecord = async (
  db: Db,
  workspaceId: string,
  key: string,
): Promise<IdempotencyRecord | undefined> => {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'state', 'response_status', 'response_body', 'created_at', 'locked_until'])
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && recordRows.decode(row);
};

/**
 * Takes over a record whose claim is stale (expired after 24 h, or in flight past its lock:
 * the request that held it died). Compare-and-set on the old lock so only one taker wins.
 */
export async function takeOverIdempotencyClaim(
  db: Db,
  workspaceId: string,
  key: string,
  previousLock: number,
  requestHash: string,
  now: number,
  lockedUntil: number,
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({
      request_hash: requestHash,
      state: 'in_flight',
      response_status: null,
      response_body: null,
      created_at: now,
      locked_until: lockedUntil,
    })
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('locked_until', '=', previousLock)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function completeIdempotencyClaim(
  db: Db,
  workspaceId: string,
  key: string,
  status: number,
  body: unknown,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set(recordRows.encode({ state: 'done', response_status: status, response_body: body }))
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .execute();
}

export async function removeIdempotencyClaim(db: Db, workspaceId: string, key: string): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('state', '=', 'in_flight')
    .execute();
}
