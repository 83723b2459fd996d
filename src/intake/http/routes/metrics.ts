import type { Next } from 'koa';
import { AppError } from '../../../shared/errors.js';
import { safeEqual, sha256Hex } from '../../../shared/crypto.js';
import type { Ctx, HttpDeps } from '../context.js';
import { METRICS_PATH } from '../openapi.js';

// Digests of equal length: the comparison reveals nothing, not even the token's length.
const bearer = (header: string): string => /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? '';

/**
 * GET /metrics for Prometheus, outside API authentication. With `metrics.token` set the
 * scraper must send it as a bearer token (compared in constant time); with metrics disabled
 * the path is not served at all.
 */
export function metricsRoute(deps: HttpDeps) {
  const { metrics } = deps;
  const token = deps.config.metrics.token;
  return async function metricsEndpoint(ctx: Ctx, next: Next): Promise<void> {
    if (!metrics || ctx.path !== METRICS_PATH || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    if (token !== null && !safeEqual(sha256Hex(bearer(ctx.get('Authorization'))), sha256Hex(token))) {
      ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
      throw new AppError('unauthorized', 'GET /metrics needs Authorization: Bearer <metrics.token>');
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.contentType;
    ctx.body = await metrics.render();
  };
}
