import type { Selectable } from 'kysely';
import { readPage, readTimePage, type ListPage, type PageOf } from './infra/list-page.js';
import type { Db, Dialect } from './infra/db.js';
import { claimRows, unleased, type Lease } from './lease.js';
import { json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookDeliveryStatus,
  WebhookEndpointsTable,
} from './tables/webhooks.js';
import { refuseDuplicate } from './infra/unique-violation.js';

export {
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_DISABLED_REASONS,
  type WebhookAttemptOutcome,
  type WebhookDeliveryStatus,
  type WebhookDisabledReason,
  type WebhookEndpointStatus,
  type WebhookSurface,
} from './tables/webhooks.js';

const endpointRows = rowCodec<Selectable<WebhookEndpointsTable>>()({ events: json<string[]>() });
/** A webhook endpoint; `events` the types it takes (`["*"]`: every type). */
export type WebhookEndpoint = EntityOf<typeof endpointRows>;
/** One event's delivery to one endpoint (the outbox row), across its attempts. */
export type WebhookDelivery = Selectable<WebhookDeliveriesTable>;
export type WebhookAttempt = Selectable<WebhookAttemptsTable>;

// Endpoints

/** A new endpoint; `already_exists` when the workspace has one for its URL (the unique index decides). */
export const saveWebhookEndpoint = (db: Db, endpoint: WebhookEndpoint): Promise<void> =>
  refuseDuplicate(
    'webhook_endpoints',
    async () => {
      await db.insertInto('webhook_endpoints').values(endpointRows.encode(endpoint)).execute();
    },
    `A webhook for ${endpoint.url} exists already`,
  );

export const findWebhookEndpoint = async (
  db: Db,
  workspaceId: string,
  id: string,
): Promise<WebhookEndpoint | undefined> => {
  const row = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && endpointRows.decode(row);
};

export const findWebhookEndpointByUrl = async (
  db: Db,
  workspaceId: string,
  url: string,
): Promise<WebhookEndpoint | undefined> => {
  const row = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('url', '=', url)
    .executeTakeFirst();
  return row && endpointRows.decode(row);
};

export const listWebhookEndpoints = async (
  db: Db,
  workspaceId: string,
  page: ListPage,
): Promise<PageOf<WebhookEndpoint>> =>
  endpointRows.decodePage(
    await readPage(db.selectFrom('webhook_endpoints').selectAll().where('workspace_id', '=', workspaceId), 'id', page),
  );

export const countWebhookEndpoints = async (db: Db, workspaceId: string): Promise<number> => {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
};

/** What the fan-out needs of each enabled endpoint of the workspaces named (read once per batch of events). */
export const listEnabledWebhookEndpointsOf = async (
  db: Db,
  workspaceIds: readonly string[],
): Promise<Array<Pick<WebhookEndpoint, 'id' | 'workspace_id' | 'events'>>> =>
  workspaceIds.length === 0
    ? []
    : endpointRows.decodeAll(
        await db
          .selectFrom('webhook_endpoints')
          .select(['id', 'workspace_id', 'events'])
          .where('workspace_id', 'in', [...workspaceIds])
          .where('status', '=', 'enabled')
          .execute(),
      );

export const listWebhookEndpointsByIds = async (db: Db, ids: string[]): Promise<WebhookEndpoint[]> =>
  ids.length === 0
    ? []
    : endpointRows.decodeAll(await db.selectFrom('webhook_endpoints').selectAll().where('id', 'in', ids).execute());

/** Changes an endpoint; a URL another of the workspace's endpoints has is `already_exists`. */
export const updateWebhookEndpoint = (
  db: Db,
  id: string,
  changes: Partial<Omit<WebhookEndpoint, 'id'>>,
): Promise<void> =>
  refuseDuplicate(
    'webhook_endpoints',
    async () => {
      await db.updateTable('webhook_endpoints').set(endpointRows.encode(changes)).where('id', '=', id).execute();
    },
    `A webhook for ${changes.url} exists already`,
  );

/** Removes an endpoint; its deliveries and attempts go with it (foreign keys cascade). */
export const removeWebhookEndpoint = async (db: Db, workspaceId: string, id: string): Promise<boolean> => {
  const result = await db
    .deleteFrom('webhook_endpoints')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
};

// Deliveries (the outbox) and attempts

export const saveWebhookDeliveries = async (db: Db, rows: WebhookDelivery[]): Promise<void> => {
  for (let i = 0; i < rows.length; i += 100)
    await db
      .insertInto('webhook_deliveries')
      .values(rows.slice(i, i + 100))
      .execute();
};

interface DeliveryFilter {
  endpointId: string;
  status?: WebhookDeliveryStatus | undefined;
}

const deliveriesOf = (db: Db, filter: DeliveryFilter) => {
  let q = db.selectFrom('webhook_deliveries').where('endpoint_id', '=', filter.endpointId);
  if (filter.status) q = q.where('status', '=', filter.status);
  return q;
};

/** Newest first; a cursor is a delivery id (random, so ordered by time, then id). */
export async function listWebhookDeliveries(
  db: Db,
  filter: DeliveryFilter,
  page: ListPage,
): Promise<PageOf<WebhookDelivery>> {
  const cursor = page.after ?? page.before;
  const cursorTime =
    cursor === undefined
      ? undefined
      : (await deliveriesOf(db, filter).select('created_at').where('id', '=', cursor).executeTakeFirst())?.created_at;
  return readTimePage(deliveriesOf(db, filter).selectAll(), { time: 'created_at', key: 'id' }, page, cursorTime);
}

export const countWebhookDeliveries = async (db: Db, filter: DeliveryFilter): Promise<number> => {
  const row = await deliveriesOf(db, filter)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
};

export const findWebhookDelivery = (db: Db, endpointId: string, id: string): Promise<WebhookDelivery | undefined> =>
  db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .where('id', '=', id)
    .executeTakeFirst();

export const findWebhookDeliveryOfEvent = (
  db: Db,
  endpointId: string,
  eventId: string,
): Promise<WebhookDelivery | undefined> =>
  db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .where('event_id', '=', eventId)
    .executeTakeFirst();

export const findWebhookDeliveryById = (db: Db, id: string): Promise<WebhookDelivery | undefined> =>
  db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();

export const listWebhookAttempts = (db: Db, deliveryIds: string[]): Promise<WebhookAttempt[]> =>
  deliveryIds.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('delivery_id', 'in', deliveryIds)
        .orderBy('started_at')
        .orderBy('attempt')
        .execute();

/** One delivery's attempts, oldest first, a page at a time. */
export const listWebhookAttemptsOfDelivery = (
  db: Db,
  deliveryId: string,
  page: { limit: number; offset: number },
): Promise<WebhookAttempt[]> =>
  db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('started_at')
    .orderBy('attempt')
    .limit(page.limit)
    .offset(page.offset)
    .execute();

export const countWebhookAttempts = async (db: Db, deliveryId: string): Promise<number> => {
  const row = await db
    .selectFrom('webhook_attempts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
};

/** Inserts attempts, many rows per statement. */
export const saveWebhookAttempts = async (db: Db, rows: WebhookAttempt[]): Promise<void> => {
  for (let i = 0; i < rows.length; i += 100)
    await db
      .insertInto('webhook_attempts')
      .values(rows.slice(i, i + 100))
      .execute();
};

/** Writes a leased delivery's new state; false when `owner` no longer holds the lease. */
export const updateLeasedWebhookDelivery = async (
  db: Db,
  id: string,
  owner: string,
  changes: Partial<Omit<WebhookDelivery, 'id'>>,
): Promise<boolean> => {
  const result = await db
    .updateTable('webhook_deliveries')
    .set(changes)
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
};

/**
 * Notes a success: ends the failure streak. Under load successes come by the hundred a
 * second, so the row is written only when a streak ends or last_success_at is a second old.
 */
export const markWebhookEndpointHealthy = async (db: Db, id: string, now: number): Promise<void> => {
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: null, last_success_at: now })
    .where('id', '=', id)
    .where((eb) =>
      eb.or([
        eb('failing_since', 'is not', null),
        eb('last_success_at', 'is', null),
        eb('last_success_at', '<', now - 1000),
      ]),
    )
    .execute();
};

/** Puts a finished (or waiting) delivery back at the head of the queue with a fresh schedule. */
export const requeueWebhookDelivery = async (db: Db, id: string, now: number): Promise<boolean> => {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'pending',
      run_attempts: 0,
      next_attempt_at: now,
      run_started_at: now,
      completed_at: null,
      updated_at: now,
    })
    .where('id', '=', id)
    .where(unleased(now))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
};

/** Ends every pending delivery of an endpoint that will not be attempted (it was disabled). */
export const failPendingWebhookDeliveries = async (
  db: Db,
  endpointId: string,
  now: number,
  error: string,
): Promise<void> => {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: error, completed_at: now, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .where(unleased(now))
    .execute();
};

/** Endpoints with due, unleased deliveries, the longest-waiting first. */
export async function listDueWebhookEndpointIds(
  db: Db,
  now: number,
  exclude: string[],
  limit: number,
): Promise<string[]> {
  let q = db
    .selectFrom('webhook_deliveries')
    .select('endpoint_id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where(unleased(now));
  if (exclude.length > 0) q = q.where('endpoint_id', 'not in', exclude);
  const rows = await q
    .groupBy('endpoint_id')
    .orderBy((eb) => eb.fn.min('next_attempt_at'))
    .limit(limit)
    .execute();
  return rows.map((r) => r.endpoint_id);
}

/** Leases up to `limit` due deliveries of one endpoint, oldest due first (store/lease.ts). */
export const claimWebhookDeliveries = (
  db: Db,
  dialect: Dialect,
  endpointId: string,
  lease: Lease,
  limit: number,
): Promise<WebhookDelivery[]> =>
  claimRows(
    db,
    dialect,
    'webhook_deliveries',
    lease,
    db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', lease.now)
      .where(unleased(lease.now))
      .orderBy('next_attempt_at')
      .limit(limit),
  );

/** The webhook deliveries of one email's events, in the order the events were written. */
export const listWebhookDeliveriesOfEmail = (db: Db, workspaceId: string, emailId: string) =>
  db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.endpoint_id',
      'd.event_id',
      'd.event_type',
      'd.status',
      'd.attempt_count',
      'd.last_status_code',
      'd.created_at',
      'w.url',
    ])
    .where('e.email_id', '=', emailId)
    .where('d.workspace_id', '=', workspaceId)
    .orderBy('e.seq')
    .orderBy('d.id')
    .execute();
