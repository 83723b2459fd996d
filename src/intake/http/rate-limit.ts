import { AppError } from '../../shared/errors.js';
import { retryAfterSeconds, type Decision, type Operation } from '../../services/rate-limits.js';
import type { Workspace } from '../../store/tables.js';
import type { Ctx, HttpDeps } from './context.js';

export function setRateLimitHeaders(ctx: Ctx, decision: Pick<Decision, 'limit' | 'remaining' | 'resetAt'>): void {
  ctx.set('X-RateLimit-Limit', String(decision.limit));
  ctx.set('X-RateLimit-Remaining', String(decision.remaining));
  ctx.set('X-RateLimit-Reset', String(Math.ceil(decision.resetAt / 1000)));
}

/**
 * Counts one request against `operation` for `key`, sets the three X-RateLimit headers and,
 * for a hard limit that is exhausted, throws 429 with Retry-After. Soft limits return the
 * decision for the caller to act on (the send path demotes priority).
 */
export async function applyLimit(ctx: Ctx, deps: HttpDeps, operation: Operation, key: string, workspace: Workspace | null): Promise<Decision> {
  const { services, clock } = deps;
  const limit = services.limitFor(operation, workspace);
  const now = clock.now();
  const decision = await services.rateLimiter.hit(`${key}:${operation}`, limit, now);
  setRateLimitHeaders(ctx, decision);
  if (!decision.allowed && !limit.soft) {
    const retryAfter = retryAfterSeconds(decision, now);
    services.metrics.rateLimited('http', operation);
    const per = limit.windowMs === 1000 ? 'second' : `${limit.windowMs / 1000} seconds`;
    throw new AppError('rate_limited', `Rate limit of ${limit.limit} per ${per} exceeded; retry after ${retryAfter} s`, { retryAfter });
  }
  return decision;
}

/** The usual case: count against the request's workspace. */
export const limitWorkspace = (ctx: Ctx, deps: HttpDeps, operation: Operation): Promise<Decision> =>
  applyLimit(ctx, deps, operation, `ws:${ctx.state.workspace!.id}`, ctx.state.workspace!);
