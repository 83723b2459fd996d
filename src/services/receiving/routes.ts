import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { findDomainByName } from '../../store/domains.js';
import {
  findRoute,
  findRouteByAddress,
  listRoutes,
  listRoutesPage,
  removeRoute,
  saveRoute,
  updateRoute,
  type RouteWithDomain,
  ROUTE_ACTIONS,
  type RouteAction,
  type RouteKind,
} from '../../store/receiving.js';
import type { ServiceDeps } from '../deps.js';
import type { ListPage } from '../../store/infra/list-page.js';
import { hasLineBreak } from '../../messages/addresses.js';
import { parseRouteAddress } from '../../receiving/routes/match-route.js';
import { isOneOf } from '../../shared/one-of.js';

export interface RouteView {
  object: 'route';
  id: string;
  /** `support@example.com`, `reply+*@example.com` or `*@example.com`. */
  address: string;
  domain: string;
  domain_id: string;
  kind: RouteKind;
  action: RouteAction;
  name: string | null;
  from_name: string | null;
  last_received_at: string | null;
  created_at: string;
  updated_at: string;
}

const routeView = (r: RouteWithDomain): RouteView => ({
  object: 'route',
  id: r.id,
  address: `${r.local_part}@${r.domain_name}`,
  domain: r.domain_name,
  domain_id: r.domain_id,
  kind: r.kind,
  action: r.action,
  name: r.name,
  from_name: r.from_name,
  last_received_at: toIsoOrNull(r.last_received_at),
  created_at: toIso(r.created_at),
  updated_at: toIso(r.updated_at),
});

interface NewRoute {
  address: string;
  action?: RouteAction | undefined;
  name?: string | null | undefined;
  from_name?: string | null | undefined;
}

interface RouteChanges {
  action?: RouteAction | undefined;
  name?: string | null | undefined;
  from_name?: string | null | undefined;
}

export interface RouteService {
  add(workspaceId: string, input: NewRoute): Promise<RouteView>;
  list(
    workspaceId: string,
    page: { limit: number; offset: number; kind?: RouteKind | undefined },
  ): Promise<{ items: RouteView[]; total: number }>;
  /** Keyset page of one kind (oldest first), for Resend's inbox list. */
  page(workspaceId: string, kind: RouteKind, page: ListPage): Promise<{ items: RouteView[]; more: boolean }>;
  /** By id, or by the route's address (`support@example.com`). */
  get(workspaceId: string, idOrAddress: string): Promise<RouteView>;
  update(workspaceId: string, idOrAddress: string, changes: RouteChanges): Promise<RouteView>;
  remove(workspaceId: string, idOrAddress: string): Promise<RouteView>;
}

const MAX_NAME = 200;

const label = (field: string, value: string | null | undefined): string | null | undefined => {
  if (value === undefined || value === null) return value;
  const trimmed = value.trim();
  if (hasLineBreak(trimmed) || trimmed.length > MAX_NAME)
    throw validationError(field, `must be one line of at most ${MAX_NAME} characters`);
  return trimmed === '' ? null : trimmed;
};

const action = (value: string | undefined): RouteAction | undefined => {
  if (value === undefined) return undefined;
  if (!isOneOf(ROUTE_ACTIONS, value)) throw validationError('action', `must be one of ${ROUTE_ACTIONS.join(', ')}`);
  return value;
};

export function createRouteService(deps: ServiceDeps): RouteService {
  const { db, clock } = deps;

  const find = async (workspaceId: string, idOrAddress: string): Promise<RouteWithDomain> => {
    let found: RouteWithDomain | undefined;
    if (isUuid(idOrAddress)) found = await findRoute(db, workspaceId, idOrAddress.toLowerCase());
    else {
      const parsed = parseRouteAddress(idOrAddress);
      if (parsed) found = await findRouteByAddress(db, workspaceId, parsed.domain, parsed.localPart);
    }
    if (!found) throw notFound(`Route ${idOrAddress}`);
    return found;
  };

  return {
    async add(workspaceId, input) {
      const parsed = parseRouteAddress(input.address);
      if (!parsed) {
        throw validationError(
          'address',
          `"${input.address.slice(0, 100)}" is not a route address: use name@domain, a pattern such as reply+*@domain, or *@domain`,
        );
      }
      const domain = await findDomainByName(db, workspaceId, parsed.domain);
      if (!domain)
        throw new AppError('forbidden', `${parsed.domain} is not a domain of this workspace: add and verify it first`, {
          field: 'address',
        });
      if (domain.status !== 'verified')
        throw new AppError(
          'forbidden',
          `${parsed.domain} is not verified: mail is received only for verified domains`,
          { field: 'address' },
        );
      const now = clock.now();
      const route: RouteWithDomain = {
        id: newId(),
        workspace_id: workspaceId,
        domain_id: domain.id,
        local_part: parsed.localPart,
        kind: parsed.kind,
        action: action(input.action) ?? 'webhook',
        name: label('name', input.name) ?? null,
        from_name: label('from_name', input.from_name) ?? null,
        last_received_at: null,
        created_at: now,
        updated_at: now,
        domain_name: domain.name,
      };
      // A second route for the address is already_exists (store/receiving.ts: the unique index decides).
      await saveRoute(db, route);
      return routeView(route);
    },

    async list(workspaceId, page) {
      const { rows, total } = await listRoutes(db, { workspaceId, ...page });
      return { items: rows.map(routeView), total };
    },

    async page(workspaceId, kind, page) {
      const { rows, more } = await listRoutesPage(db, { workspaceId, kind }, page);
      return { items: rows.map(routeView), more };
    },

    get: async (workspaceId, idOrAddress) => routeView(await find(workspaceId, idOrAddress)),

    async update(workspaceId, idOrAddress, changes) {
      const route = await find(workspaceId, idOrAddress);
      const set = {
        ...(changes.action !== undefined ? { action: action(changes.action)! } : {}),
        ...(changes.name !== undefined ? { name: label('name', changes.name) ?? null } : {}),
        ...(changes.from_name !== undefined ? { from_name: label('from_name', changes.from_name) ?? null } : {}),
        updated_at: clock.now(),
      };
      await updateRoute(db, workspaceId, route.id, set);
      return routeView({ ...route, ...set });
    },

    async remove(workspaceId, idOrAddress) {
      const route = await find(workspaceId, idOrAddress);
      await removeRoute(db, workspaceId, route.id);
      return routeView(route);
    },
  };
}
