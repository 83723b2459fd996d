import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { flag, json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type {
  ReceivedEmailContentsTable,
  ReceivedEmailsTable,
  ReceivingRoutesTable,
  RouteKind,
} from './tables/receiving.js';
import { refuseDuplicate } from './infra/unique-violation.js';

export { ROUTE_ACTIONS, ROUTE_KINDS, type RouteAction, type RouteKind } from './tables/receiving.js';

/** Which addresses of a workspace's domain take mail: every column is kept as it is read. */
type ReceivingRoute = Selectable<ReceivingRoutesTable>;

/** One attachment as stored with a received message: its description; the bytes stay in the raw message. */
export interface StoredAttachment {
  id: string;
  position: number;
  filename: string | null;
  content_type: string;
  content_disposition: 'attachment' | 'inline';
  content_id: string | null;
  size: number;
  sha256: string;
}

const addresses = json<string[]>();
const receivedRows = rowCodec<Selectable<ReceivedEmailsTable>>()({
  route_ids: addresses,
  recipients: addresses,
  to_addresses: addresses,
  cc_addresses: addresses,
  reply_to: addresses,
  message_references: addresses,
  // The results' shape is receiving/routes/authenticate-message.ts's (authenticationOf): the store keeps the document.
  authentication: json<unknown>(),
  attachments: json<StoredAttachment[]>(),
  tls: flag,
});
/** A message the inbound listener took for one workspace's routes. */
export type ReceivedEmail = EntityOf<typeof receivedRows>;

const contentRows = rowCodec<Selectable<ReceivedEmailContentsTable>>()({ headers: json<Array<[string, string]>>() });
/** A received message as it came, and its parsed bodies and headers (in message order). */
export type ReceivedEmailContent = EntityOf<typeof contentRows>;

/** A route with the name of its domain, as the inbound listener and the API show it. */
export type RouteWithDomain = ReceivingRoute & { domain_name: string };

const routesWithDomain = (db: Db) =>
  db
    .selectFrom('receiving_routes')
    .innerJoin('domains', 'domains.id', 'receiving_routes.domain_id')
    .selectAll('receiving_routes')
    .select('domains.name as domain_name');

/** A new route; `already_exists` when its domain has a route for the address (two concurrent adds: the unique index decides). */
export const saveRoute = (db: Db, route: ReceivingRoute & { domain_name: string }): Promise<void> =>
  refuseDuplicate(
    'receiving_routes',
    async () => {
      const { domain_name: _domain, ...row } = route;
      await db.insertInto('receiving_routes').values(row).execute();
    },
    `A route for ${route.local_part}@${route.domain_name} exists already`,
    { field: 'address' },
  );

export const findRoute = (db: Db, workspaceId: string, id: string): Promise<RouteWithDomain | undefined> =>
  routesWithDomain(db)
    .where('receiving_routes.workspace_id', '=', workspaceId)
    .where('receiving_routes.id', '=', id)
    .executeTakeFirst();

export const findRouteByAddress = (
  db: Db,
  workspaceId: string,
  domainName: string,
  localPart: string,
): Promise<RouteWithDomain | undefined> =>
  routesWithDomain(db)
    .where('receiving_routes.workspace_id', '=', workspaceId)
    .where('domains.name', '=', domainName)
    .where('receiving_routes.local_part', '=', localPart)
    .executeTakeFirst();

interface RouteListQuery {
  workspaceId: string;
  limit: number;
  offset: number;
  kind?: RouteKind | undefined;
}

export async function listRoutes(db: Db, q: RouteListQuery): Promise<{ rows: RouteWithDomain[]; total: number }> {
  let rows = routesWithDomain(db).where('receiving_routes.workspace_id', '=', q.workspaceId);
  let count = db
    .selectFrom('receiving_routes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', q.workspaceId);
  if (q.kind) {
    rows = rows.where('receiving_routes.kind', '=', q.kind);
    count = count.where('kind', '=', q.kind);
  }
  const [page, total] = await Promise.all([
    rows.orderBy('receiving_routes.id').limit(q.limit).offset(q.offset).execute(),
    count.executeTakeFirstOrThrow(),
  ]);
  return { rows: page, total: Number(total.n) };
}

/** Keyset page of one kind of route, oldest first (ids are UUIDv7); one extra row says whether more exist. */
export const listRoutesPage = (
  db: Db,
  q: { workspaceId: string; kind: RouteKind },
  page: ListPage,
): Promise<PageOf<RouteWithDomain>> =>
  readPage(
    routesWithDomain(db)
      .where('receiving_routes.workspace_id', '=', q.workspaceId)
      .where('receiving_routes.kind', '=', q.kind),
    'receiving_routes.id',
    page,
    true,
  );

/** Every route of the verified domains of this name, in every workspace: what RCPT TO is checked against. */
export const listRoutesOfDomainName = (db: Db, domainName: string): Promise<RouteWithDomain[]> =>
  routesWithDomain(db)
    .where('domains.name', '=', domainName)
    .where('domains.status', '=', 'verified')
    .orderBy('receiving_routes.created_at')
    .execute();

export async function updateRoute(
  db: Db,
  workspaceId: string,
  id: string,
  changes: Partial<Pick<ReceivingRoute, 'action' | 'name' | 'from_name' | 'updated_at'>>,
): Promise<boolean> {
  const r = await db
    .updateTable('receiving_routes')
    .set(changes)
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function removeRoute(db: Db, workspaceId: string, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('receiving_routes')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Writes a received message and its content, and marks its routes; call inside the caller's transaction. */
export async function saveReceivedEmail(trx: Db, email: ReceivedEmail, content: ReceivedEmailContent): Promise<void> {
  await trx.insertInto('received_emails').values(receivedRows.encode(email)).execute();
  await trx.insertInto('received_email_contents').values(contentRows.encode(content)).execute();
  if (email.route_ids.length > 0)
    await trx
      .updateTable('receiving_routes')
      .set({ last_received_at: email.created_at })
      .where('id', 'in', email.route_ids)
      .execute();
}

export const findReceivedEmail = async (
  db: Db,
  workspaceId: string,
  id: string,
): Promise<ReceivedEmail | undefined> => {
  const row = await db
    .selectFrom('received_emails')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && receivedRows.decode(row);
};

/** The parsed bodies and headers, without the raw source. */
export type ReceivedEmailBody = Omit<ReceivedEmailContent, 'raw'>;

export const findReceivedEmailBody = async (db: Db, emailId: string): Promise<ReceivedEmailBody | undefined> => {
  const row = await db
    .selectFrom('received_email_contents')
    .select(['email_id', 'text', 'html', 'headers'])
    .where('email_id', '=', emailId)
    .executeTakeFirst();
  return row && contentRows.decode(row);
};

export async function findReceivedRaw(db: Db, emailId: string): Promise<Buffer | undefined> {
  const row = await db
    .selectFrom('received_email_contents')
    .select('raw')
    .where('email_id', '=', emailId)
    .executeTakeFirst();
  return row ? Buffer.from(row.raw) : undefined;
}

interface ReceivedListQuery {
  workspaceId: string;
  limit: number;
  /** Older than this id (UUIDv7: ids sort by time). */
  after?: string | undefined;
  /** Newer than this id. */
  before?: string | undefined;
}

/** Keyset page, newest first; one extra row says whether more exist in the direction of travel. */
export async function listReceivedEmails(
  db: Db,
  q: ReceivedListQuery,
): Promise<{ rows: ReceivedEmail[]; more: boolean }> {
  const query = db.selectFrom('received_emails').selectAll().where('workspace_id', '=', q.workspaceId);
  if (q.before !== undefined) {
    const rows = await query
      .where('id', '>', q.before)
      .orderBy('id', 'asc')
      .limit(q.limit + 1)
      .execute();
    return { rows: receivedRows.decodeAll(rows.slice(0, q.limit).reverse()), more: rows.length > q.limit };
  }
  const rows = await (q.after !== undefined ? query.where('id', '<', q.after) : query)
    .orderBy('id', 'desc')
    .limit(q.limit + 1)
    .execute();
  return { rows: receivedRows.decodeAll(rows.slice(0, q.limit)), more: rows.length > q.limit };
}
