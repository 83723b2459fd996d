import type { z } from 'zod';
import { AppError, validationError } from '../../shared/errors.js';
import { parseWith } from '../../shared/validate.js';
import { hasScope, type Principal, type Scope } from '../../services/credentials.js';
import type { Operation } from '../../services/rate-limits.js';
import type { Workspace } from '../../store/workspaces.js';
import type { Ctx, HttpDeps } from './context.js';
import type { IdempotencyClaim } from '../../services/idempotency.js';
import { sha256Hex } from '../../shared/crypto.js';
import { stableStringify } from '../../shared/stable-json.js';
import { limitWorkspace } from './rate-limit.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface HandlerInput<B, Q> {
  ctx: Ctx;
  /** Present when the request carries an Idempotency-Key on an idempotent route. */
  idempotency: IdempotencyClaim | undefined;
  deps: HttpDeps;
  workspace: Workspace;
  principal: Principal;
  body: B;
  query: Q;
  params: Record<string, string>;
}

/**
 * One API route as data: method, path, the rate-limit bucket, the OAuth scope, the request
 * schemas and the handler. The router, the docs and the OpenAPI document all read this.
 */
export interface Route<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType> {
  method: Method;
  path: string;
  summary: string;
  /**
   * Rate-limit bucket; `null` when the handler applies limits itself (sending: the send
   * service counts each message in its type's window, and a request refused before that
   * shows the window of its type, see `showRateLimit`).
   */
  operation: Operation | null;
  /** OAuth scope required on /v1 (API keys have every scope). */
  scope: Scope;
  body?: B;
  query?: Q;
  /** Status of a successful response (default 200). */
  status?: number;
  /** Creating requests honour Idempotency-Key (SPEC Limits: Idempotency). */
  idempotent?: boolean;
  /** An offset list: takes `limit` and `offset` (pagination.ts). */
  paginated?: boolean;
  /** Takes multipart/form-data, which the handler reads itself as a stream (file uploads). */
  multipart?: boolean;
  /** Content type of a successful response that is not JSON. */
  responseType?: string;
  /**
   * The instance's, not a workspace's (IP pools, delivery state): a master key only, and no
   * workspace is chosen. Its handler's `workspace` is absent.
   */
  master?: boolean;
  handler(input: HandlerInput<z.infer<B>, z.infer<Q>>): Promise<unknown>;
}

export const defineRoute = <B extends z.ZodType = z.ZodUnknown, Q extends z.ZodType = z.ZodUnknown>(
  route: Route<B, Q>,
): Route => route;

/**
 * No id, name or filter holds a control character, and PostgreSQL refuses a NUL in a text
 * parameter (a 500 if it got that far): refused here for every route, whatever its handler does.
 */
function refuseControlCharacters(params: Record<string, string>, query: Ctx['query']): void {
  for (const [name, value] of Object.entries(params))
    if (/[\u0000-\u001f\u007f]/.test(value)) throw validationError(name, 'must not contain control characters');
  for (const [name, value] of Object.entries(query)) {
    if ([value].flat().some((v) => typeof v === 'string' && v.includes('\u0000')))
      throw validationError(name, 'must not contain NUL characters');
  }
}

/** Runs a route on an authenticated request: scope, rate limit, validation, handler, status. */
export async function runRoute(route: Route, ctx: Ctx, deps: HttpDeps, params: Record<string, string>): Promise<void> {
  const principal = ctx.state.principal!;
  const workspace = ctx.state.workspace!;
  if (route.master && !principal.master)
    throw new AppError('forbidden', `${route.method} ${route.path} is the operator's: it takes a master key`);
  refuseControlCharacters(params, ctx.query);
  if (route.operation) await limitWorkspace(ctx, deps, route.operation);
  if (!hasScope(principal, route.scope)) {
    throw new AppError(
      'forbidden',
      `This ${principal.kind === 'oauth' ? 'access token' : 'API key'} lacks the scope ${route.scope}${principal.kind !== 'oauth' ? ' (it has sending access only)' : ''}`,
    );
  }
  const idempotency = route.idempotent ? await claimIdempotencyKey(route, ctx, deps) : undefined;
  if (idempotency === 'replayed') return;
  try {
    const body = route.body ? parseWith(route.body, ctx.state.body ?? {}, 'body') : ctx.state.body;
    const query = route.query ? parseWith(route.query, ctx.query, 'query') : ctx.query;
    const result = await route.handler({ ctx, deps, workspace, principal, body, query, params, idempotency });
    ctx.status = route.status ?? 200;
    // A handler may name a more precise type (a file's own); the route's is the default.
    if (route.responseType && !ctx.response.get('Content-Type')) ctx.type = route.responseType;
    ctx.body = result;
    // Handlers that commit their effects record the response in that same transaction; for
    // the others it is recorded now.
    if (idempotency && !idempotency.completed) await idempotency.complete(ctx.status, result);
  } catch (err) {
    // A failed request leaves no trace: the same key may be retried.
    await idempotency?.release();
    throw err;
  }
}

const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/**
 * Claims the request's Idempotency-Key, or answers it: a replay of the stored response, or a
 * 409. The key is scoped to the workspace; the fingerprint covers method, path and body.
 */
async function claimIdempotencyKey(
  route: Route,
  ctx: Ctx,
  deps: HttpDeps,
): Promise<IdempotencyClaim | 'replayed' | undefined> {
  const key = ctx.get(IDEMPOTENCY_HEADER);
  if (!key) return undefined;
  const fingerprint = sha256Hex(
    `${route.method} ${route.path} ${JSON.stringify(ctx.params ?? {})}\n${stableStringify(ctx.state.body ?? null)}`,
  );
  const outcome = await deps.services.idempotency.claim(ctx.state.workspace!.id, key, fingerprint);
  if (outcome.kind === 'replay') {
    ctx.status = outcome.status;
    ctx.body = outcome.body;
    ctx.set('Idempotent-Replayed', 'true');
    return 'replayed';
  }
  return outcome.handle;
}
