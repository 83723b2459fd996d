import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { ReceivedEmail, ReceivedEmailContent, ReceivingRoute, RouteKind } from './tables.js';

/** A route with the name of its domain, as the inbound listener and the API show it. */
export type RouteWithDomain = ReceivingRoute & { domain_name: string };

const routesWithDomain = (db: Db) =>
  db.selectFrom('receiving_routes').innerJoin('domains', 'domains.id', 'receiving_routes.domain_id').selectAll('receiving_routes').select('domains.name as domain_name');

export const saveRoute = async (db: Db, route: ReceivingRoute): Promise<void> => {
  await db.insertInto('receiving_routes').values(route).execute();
};

export const findRoute = (db: Db, workspaceId: string, id: string): Promise<RouteWithDomain | undefined> =>
  routesWithDomain(db).where('receiving_routes.workspace_id', '=', workspaceId).where('receiving_routes.id', '=', id).executeTakeFirst();

export const findRouteByAddress = (db: Db, workspaceId: string, domainName: string, localPart: string): Promise<RouteWithDomain | undefined> =>
  routesWithDomain(db)
    .where('receiving_routes.workspace_id', '=', workspaceId)
    .where('domains.name', '=', domainName)
    .where('receiving_routes.local_part', '=', localPart)
    .executeTakeFirst();

export interface RouteListQuery {
  workspaceId: string;
  limit: number;
  offset: number;
  kind?: RouteKind | undefined;
}

export async function listRoutes(db: Db, q: RouteListQuery): Promise<{ rows: RouteWithDomain[]; total: number }> {
  let rows = routesWithDomain(db).where('receiving_routes.workspace_id', '=', q.workspaceId);
  let count = db.selectFrom('receiving_routes').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', q.workspaceId);
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
export const listRoutesPage = (db: Db, q: { workspaceId: string; kind: RouteKind }, page: ListPage): Promise<PageOf<RouteWithDomain>> =>
  readPage(routesWithDomain(db).where('receiving_routes.workspace_id', '=', q.workspaceId).where('receiving_routes.kind', '=', q.kind), 'receiving_routes.id', page, true);

/** Every route of the verified domains of this name, in every workspace: what RCPT TO is checked against. */
export const listRoutesOfDomainName = (db: Db, domainName: string): Promise<RouteWithDomain[]> =>
  routesWithDomain(db).where('domains.name', '=', domainName).where('domains.status', '=', 'verified').orderBy('receiving_routes.created_at').execute();

export async function updateRoute(db: Db, workspaceId: string, id: string, changes: Partial<Pick<ReceivingRoute, 'action' | 'name' | 'from_name' | 'updated_at'>>): Promise<boolean> {
  const r = await db.updateTable('receiving_routes').set(changes).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function removeRoute(db: Db, workspaceId: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('receiving_routes').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Writes a received message and its content, and marks its routes; call inside the caller's transaction. */
export async function saveReceivedEmail(trx: Db, email: ReceivedEmail, content: ReceivedEmailContent): Promise<void> {
  await trx.insertInto('received_emails').values(email).execute();
  await trx.insertInto('received_email_contents').values(content).execute();
  const routeIds = JSON.parse(email.route_ids) as string[];
  if (routeIds.length > 0) await trx.updateTable('receiving_routes').set({ last_received_at: email.created_at }).where('id', 'in', routeIds).execute();
}

export const findReceivedEmail = (db: Db, workspaceId: string, id: string): Promise<ReceivedEmail | undefined> =>
  db.selectFrom('received_emails').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

/** The parsed bodies and headers, without the raw source. */
export type ReceivedEmailBody = Omit<ReceivedEmailContent, 'raw'>;

export const findReceivedEmailBody = (db: Db, emailId: string): Promise<ReceivedEmailBody | undefined> =>
  db.selectFrom('received_email_contents').select(['email_id', 'text', 'html', 'headers']).where('email_id', '=', emailId).executeTakeFirst();

export async function findReceivedRaw(db: Db, emailId: string): Promise<Buffer | undefined> {
  const row = await db.selectFrom('received_email_contents').select('raw').where('email_id', '=', emailId).executeTakeFirst();
  return row ? Buffer.from(row.raw) : undefined;
}

export interface ReceivedListQuery {
  workspaceId: string;
  limit: number;
  /** Older than this id (UUIDv7: ids sort by time). */
  after?: string | undefined;
  /** Newer than this id. */
  before?: string | undefined;
}

/** Keyset page, newest first; one extra row says whether more exist in the direction of travel. */
export async function listReceivedEmails(db: Db, q: ReceivedListQuery): Promise<{ rows: ReceivedEmail[]; more: boolean }> {
  const query = db.selectFrom('received_emails').selectAll().where('workspace_id', '=', q.workspaceId);
  if (q.before !== undefined) {
    const rows = await query.where('id', '>', q.before).orderBy('id', 'asc').limit(q.limit + 1).execute();
    return { rows: rows.slice(0, q.limit).reverse(), more: rows.length > q.limit };
  }
  const rows = await (q.after !== undefined ? query.where('id', '<', q.after) : query).orderBy('id', 'desc').limit(q.limit + 1).execute();
  return { rows: rows.slice(0, q.limit), more: rows.length > q.limit };
}
