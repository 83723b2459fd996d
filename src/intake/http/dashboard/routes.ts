import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import { allows, type Permission, type Role } from '../../../services/users.js';
import type { DashState } from './session.js';

/**
 * What a dashboard route needs: a permission of the role (services/users.ts ROLE_PERMISSIONS),
 * or only a session (signing out, choosing a workspace, one's own account).
 */
type Need = Permission | 'session';

export interface RouteDeclaration {
  method: 'GET' | 'POST';
  /** Under /dashboard, with :params as @koa/router writes them. */
  path: string;
  needs: Need;
}

type Handler = RouterMiddleware<DashState>;

const matcher = (path: string): RegExp =>
  new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z]+/g, '[^/]+')}/?$`);

/**
 * The signed-in dashboard's routes, each declared with what it needs. Pages register through
 * this (they are not handed the router), so no route can exist without a declaration; the one
 * check (`permits`) is run by the session middleware before any handler, and asked by the
 * layout before it draws a form or button, so what is shown and what is accepted cannot differ.
 */
export class DashRoutes {
  readonly declared: RouteDeclaration[] = [];
  private readonly matchers: Array<{ route: RouteDeclaration; pattern: RegExp }> = [];

  constructor(private readonly router: Router<DashState>) {}

  get(path: string, needs: Need, handler: Handler): void {
    this.add({ method: 'GET', path, needs }, handler);
  }

  post(path: string, needs: Need, handler: Handler): void {
    this.add({ method: 'POST', path, needs }, handler);
  }

  private add(route: RouteDeclaration, handler: Handler): void {
    if (this.declared.some((r) => r.method === route.method && r.path === route.path))
      throw new Error(`dashboard route declared twice: ${route.method} ${route.path}`);
    this.declared.push(route);
    this.matchers.push({ route, pattern: matcher(`/dashboard${route.path === '/' ? '' : route.path}`) });
    if (route.method === 'GET') this.router.get(route.path, handler);
    else this.router.post(route.path, handler);
  }

  /** The declaration a request falls under (HEAD as GET); undefined: no such page. */
  find(method: string, path: string): RouteDeclaration | undefined {
    const m = method === 'HEAD' ? 'GET' : method;
    const bare = path.split(/[?#]/, 1)[0]!;
    // A literal path wins over a parameter in the same place (/campaigns/new before /campaigns/:id).
    const hits = this.matchers.filter((x) => x.route.method === m && x.pattern.test(bare));
    return (hits.find((x) => !x.route.path.includes(':')) ?? hits[0])?.route;
  }

  /** The one check: may `role` do `method path`? A path no route declares is not permitted. */
  permits(role: Role, method: string, path: string): boolean {
    const route = this.find(method, path);
    return route !== undefined && (route.needs === 'session' || allows(role, route.needs));
  }
}
