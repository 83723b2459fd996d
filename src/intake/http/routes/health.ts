import type { Next } from 'koa';
import type { Ctx, HttpDeps } from '../context.js';

/** Liveness and readiness, outside authentication and rate limits (load balancers poll them). */
export function healthRoutes(deps: HttpDeps) {
  return async function health(ctx: Ctx, next: Next): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/readyz') {
      const ready = await deps.ready().catch(() => false);
      ctx.status = ready ? 200 : 503;
      ctx.body = { status: ready ? 'ok' : 'unavailable', database: ready ? 'reachable' : 'unreachable' };
      return;
    }
    return next();
  };
}
