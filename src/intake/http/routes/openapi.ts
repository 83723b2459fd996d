import type { Next } from 'koa';
import type { Ctx } from '../context.js';
import { OPENAPI_PATH, renderOpenApi } from '../openapi.js';
import type { Route } from '../route.js';

/** GET /v1/openapi.json, without authentication: the description of the API is public. */
export function openApiRoute(routes: Route[]) {
  let document: string | undefined;
  return async function openApi(ctx: Ctx, next: Next): Promise<void> {
    if (ctx.path !== OPENAPI_PATH || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    // Built on first request, not at start-up: most servers are never asked.
    document ??= renderOpenApi(routes);
    ctx.type = 'application/json';
    ctx.body = document;
  };
}
