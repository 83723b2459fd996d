import type { Next } from 'koa';
import type { Ctx, HttpDeps } from '../context.js';

/**
 * Liveness and readiness, outside authentication and rate limits (load balancers poll them).
 * /healthz touches nothing: the process answers. /readyz asks the database and the disk.
 */
export function healthRoutes(deps: HttpDeps) {
  return async function health(ctx: Ctx, next: Next): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/readyz') {
      const { ready, ...checks } = await deps.ready();
      ctx.status = ready ? 200 : 503;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { status: ready ? 'ok' : 'unavailable', ...checks };
      return;
    }
    return next();
  };
}
