import Router from '@koa/router';
import Koa, { type Next } from 'koa';
import compose from 'koa-compose';
import { AppError } from '../../shared/errors.js';
import { writeScope } from '../../store/infra/wal-sync.js';
import { isApiPath, type Ctx, type HttpDeps, type State } from './context.js';
import { authenticate, selectWorkspace } from './middleware/authenticate.js';
import { parseBody } from './middleware/parse-body.js';
import { renderErrors } from './middleware/render-errors.js';
import { recordApiLog } from './middleware/record-api-log.js';
import { clientAddress } from './client-address.js';
import { requestId } from './middleware/request-id.js';
import { limitWorkspace, showRateLimit } from './rate-limit.js';
import { runRoute, type Route } from './route.js';
import { rootResources, v1PathOf } from './root-alias.js';
import { apiRoutes } from './routes/index.js';
import { healthRoutes } from './routes/health.js';
import { openApiRoute } from './routes/openapi.js';
import { metricsRoute } from './routes/metrics.js';
import { unsubscribeRoutes } from './routes/public/unsubscribe.js';
import { attachmentDownloadRoutes } from './routes/public/attachment-download.js';
import { sharedEmailRoutes } from './routes/public/shared-email.js';
import { trackingRoutes } from './routes/tracking.js';
import { dashboardRoutes } from './dashboard/index.js';
import { createOAuthServer } from './oauth/provider.js';

interface ApiRouter {
  router: Router<State>;
  /** The route a request's method and path name, if any (also before it was dispatched). */
  routeOf(ctx: Ctx): Route | undefined;
}

export function apiRouter(deps: HttpDeps, routes: Route[]): ApiRouter {
  const router = new Router<State>();
  const byLayer = new Map<unknown, Route>();
  const seen = new Set<string>();
  for (const route of routes) {
    // A route listed twice would run only its first copy and hide the mistake.
    const key = `${route.method} ${route.path}`;
    if (seen.has(key)) throw new Error(`route ${key} is defined twice`);
    seen.add(key);
    const layer = router.register(route.path, [route.method], async (ctx: Ctx) =>
      runRoute(route, ctx, deps, ctx.params as Record<string, string>),
    );
    byLayer.set(layer, route);
  }
  const routeOf = (ctx: Ctx) =>
    router
      .match(ctx.path, ctx.method)
      .pathAndMethod.map((layer) => byLayer.get(layer))
      .find((r) => r !== undefined);
  return { router, routeOf };
}

/**
 * The Koa application of both API surfaces. Order matters: request id and error rendering
 * wrap everything; API paths then get the rate-limit headers (on every response, set last),
 * authentication (before the body is read), body parsing, the workspace, the route (which
 * applies its rate limit and scope) and, when nothing matched, a 405 (path known, method
 * not) or 404.
 */
export function createHttpApp(given: HttpDeps, routes: Route[] = apiRoutes): Koa<State> {
  const deps: HttpDeps = given.oauth ? given : { ...given, oauth: createOAuthServer(given) };
  const app = new Koa<State>();
  // Koa reads X-Forwarded-Proto/-Host only with app.proxy; clientAddress (first below) removes
  // them, and X-Forwarded-For, from any request that did not come through a trusted proxy, and
  // sets the client address. Koa's own reading of X-Forwarded-For (the leftmost entry, the
  // client's to write) is never used.
  app.proxy = deps.config.http.trustProxy !== 0;
  // Errors are rendered and logged by renderErrors; what reaches Koa's handler is a client
  // that went away mid-response.
  app.on('error', (err: Error) => deps.logger.debug({ err }, 'http response error'));

  const { router, routeOf } = apiRouter(deps, routes);
  const bodies = deps.services.intakeMemory;
  deps.metrics?.bodyMemoryFrom(() => ({ held: bodies.held(), waiting: bodies.waiting() }));
  const api = compose<Ctx>([
    showRateLimit(deps, routeOf, deps.logger),
    authenticate(deps),
    parseBody(deps.config.http.bodyLimit, (ctx) => routeOf(ctx)?.multipart === true, bodies),
    selectWorkspace(deps, (ctx) => routeOf(ctx)?.master === true),
    // eslint-disable-next-line no-restricted-syntax -- @koa/router types its middleware over its own context; ours extends Koa's
    router.routes() as unknown as (ctx: Ctx, next: Next) => Promise<void>,
    async (ctx: Ctx) => {
      await limitWorkspace(ctx, deps, 'api');
      const allowed = [...new Set(router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods))];
      if (allowed.length > 0) {
        ctx.set('Allow', allowed.join(', '));
        throw new AppError(
          'method_not_allowed',
          `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allowed.join(', ')}`,
        );
      }
      throw new AppError('not_found', `No route ${ctx.method} ${ctx.path}`);
    },
  ]);

  app.use(clientAddress(deps.config.http.trustProxy));
  app.use(requestId);
  app.use(recordApiLog(deps));
  app.use(renderErrors(deps.logger));
  // What a request wrote is on disk before it is answered (SQLite commits do not fsync on the
  // event loop: Store.durable). Writes through the commit batcher (sending) are not counted
  // here: the batcher waited for them before the service returned.
  app.use(async (ctx: Ctx, next: Next) => {
    const scope = { wrote: false };
    await writeScope.run(scope, next);
    if (scope.wrote) await deps.services.durable();
  });
  app.use(healthRoutes(deps));
  app.use(openApiRoute(routes));
  app.use(metricsRoute(deps));
  app.use(unsubscribeRoutes(deps));
  app.use(attachmentDownloadRoutes(deps));
  app.use(sharedEmailRoutes(deps));
  app.use(trackingRoutes(deps));
  app.use(deps.oauth!.middleware);
  app.use(dashboardRoutes(deps));
  if (deps.mcp) app.use(deps.mcp.middleware);
  const resources = rootResources(routes);
  app.use(async (ctx: Ctx, next: Next) => {
    if (isApiPath(ctx.path)) return api(ctx, next);
    const v1Path = v1PathOf(ctx.path, resources);
    if (v1Path) {
      ctx.path = v1Path;
      return api(ctx, next);
    }
    await next();
    if (ctx.body === undefined && ctx.status === 404)
      throw new AppError(
        'not_found',
        `No route ${ctx.method} ${ctx.path}: the API is under /v1 (e.g. POST /v1/emails), its resources also at the root (POST /emails), and /api/v1`,
      );
  });
  return app;
}
