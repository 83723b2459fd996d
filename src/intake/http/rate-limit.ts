import { AppError, isAppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { type Operation } from '../../services/rate-limits.js';
import { retryAfterSeconds, type Decision } from '../../shared/fixed-window.js';
import type { Workspace } from '../../store/workspaces.js';
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
export async function applyLimit(
  ctx: Ctx,
  deps: HttpDeps,
  operation: Operation,
  key: string,
  workspace: Workspace | null,
): Promise<Decision> {
  return countAgainstLimit(deps, operation, key, workspace, (decision) => setRateLimitHeaders(ctx, decision));
}

/**
 * Counts one request against `operation` for `key` and throws 429 for a hard limit that is
 * exhausted; `show` sees the decision first. Every surface (HTTP routes, MCP tool calls) counts here.
 */
export async function countAgainstLimit(
  deps: Pick<HttpDeps, 'services' | 'clock'>,
  operation: Operation,
  key: string,
  workspace: Workspace | null,
  show: (decision: Decision) => void = () => {},
): Promise<Decision> {
  const { services, clock } = deps;
  const limit = services.limitFor(operation, workspace);
  const now = clock.now();
  const decision = await services.rateLimiter.hit(`${key}:${operation}`, limit, now);
  show(decision);
  if (!decision.allowed && !limit.soft) {
    const retryAfter = retryAfterSeconds(decision, now);
    services.metrics.rateLimited('http', operation);
    const per = limit.windowMs === 1000 ? 'second' : `${limit.windowMs / 1000} seconds`;
    throw new AppError(
      'rate_limited',
      `Rate limit of ${limit.limit} per ${per} exceeded; retry after ${retryAfter} s`,
      { retryAfter },
    );
  }
  return decision;
}

/** The usual case: count against the request's workspace. */
export const limitWorkspace = (ctx: Ctx, deps: HttpDeps, operation: Operation): Promise<Decision> =>
  applyLimit(ctx, deps, operation, `ws:${ctx.state.workspace!.id}`, ctx.state.workspace!);

/** The send bucket of a send request: marketing when every message in it says so. */
const sendOperation = (body: unknown): Operation => {
  const messages = Array.isArray(body) ? body : [body];
  const marketing =
    messages.length > 0 && messages.every((m) => (m as { type?: unknown } | null)?.type === 'marketing');
  return marketing ? 'send.marketing' : 'send.transactional';
};

/**
 * Every API response carries X-RateLimit-* (SPEC Limits rule 4). A request that counted
 * against a bucket shows that bucket; one refused before it counted (bad JSON, validation,
 * an unknown workspace, a 500) shows, without counting, the bucket it would have counted
 * against: its route's, the send bucket of its message type for sends, the general `api`
 * bucket otherwise. Before a workspace is known (no valid key, a master key that names
 * none) that is the client address's allowance of failed authentications.
 */
export function showRateLimit(
  deps: HttpDeps,
  routeOf: (ctx: Ctx) => { operation: Operation | null } | undefined,
  logger: Logger,
) {
  return async function showRateLimitMiddleware(ctx: Ctx, next: () => Promise<unknown>): Promise<void> {
    let thrown: unknown;
    try {
      await next();
    } catch (err) {
      thrown = err;
      throw err;
    } finally {
      if (!ctx.response.get('X-RateLimit-Limit') && !(isAppError(thrown) && thrown.rateLimit)) {
        // Showing the window must never hide the response itself.
        await peekLimit(ctx, deps, routeOf(ctx)).catch((err: unknown) =>
          logger.warn({ err, requestId: ctx.state.requestId }, 'could not read the rate-limit window'),
        );
      }
    }
  };
}

async function peekLimit(ctx: Ctx, deps: HttpDeps, route: { operation: Operation | null } | undefined): Promise<void> {
  const { services, clock } = deps;
  const workspace = ctx.state.workspace;
  let key: string;
  let operation: Operation;
  if (workspace) {
    operation = !route ? 'api' : (route.operation ?? sendOperation(ctx.state.body));
    key = `ws:${workspace.id}`;
  } else {
    operation = 'auth.failure';
    key = `ip:${ctx.state.clientAddress}`;
  }
  setRateLimitHeaders(
    ctx,
    await services.rateLimiter.peek(
      `${key}:${operation}`,
      services.limitFor(operation, workspace ?? null),
      clock.now(),
    ),
  );
}
