import { actingAs } from '../../../shared/actor.js';
import type { Next } from 'koa';
import { AppError } from '../../../shared/errors.js';
import { isUuid } from '../../../shared/ids.js';
import type { HttpDeps, Ctx } from '../context.js';
import { applyLimit } from '../rate-limit.js';

const bearer = (header: string): string | undefined => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
};

/**
 * A master key names the workspace it acts on. Accepted, in this order: the X-Workspace-Id
 * header, the `workspace_id` query parameter, the `workspace_id` field of a JSON body.
 */
function requestedWorkspace(ctx: Ctx): string | undefined {
  const fromHeader = ctx.get('X-Workspace-Id');
  if (fromHeader) return fromHeader;
  const fromQuery = ctx.query.workspace_id;
  if (typeof fromQuery === 'string' && fromQuery) return fromQuery;
  const body = ctx.state.body as { workspace_id?: unknown } | undefined;
  if (body && typeof body === 'object' && typeof body.workspace_id === 'string') return body.workspace_id;
  return undefined;
}

/**
 * Resolves the Authorization header to a principal, before the body is read: a request
 * without a valid key costs no body parsing. A workspace key's workspace is known from here
 * on; a master key's is chosen by `selectWorkspace` once the body is parsed. Failed attempts
 * count against the client address, so guessing keys hits 429 quickly.
 */
export function authenticate(deps: HttpDeps) {
  const { services, clock } = deps;
  return async function authenticateMiddleware(ctx: Ctx, next: Next): Promise<void> {
    const failureKey = `ip:${ctx.state.clientAddress}`;
    const blocked = await services.rateLimiter.peek(
      `${failureKey}:auth.failure`,
      services.limitFor('auth.failure', null),
      clock.now(),
    );
    if (blocked.remaining === 0) await applyLimit(ctx, deps, 'auth.failure', failureKey, null);

    let principal;
    try {
      principal = await services.credentials.authenticate(bearer(ctx.get('Authorization')), ctx.state.surface);
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthorized') {
        // RFC 9728: a client that holds no token finds the authorization server from here.
        if (deps.oauth && ctx.state.surface === 'v1')
          ctx.set('WWW-Authenticate', `Bearer resource_metadata="${deps.oauth.resourceMetadataUrl('v1')}"`);
        await applyLimit(ctx, deps, 'auth.failure', failureKey, null);
      }
      throw err;
    }
    ctx.state.principal = principal;
    if (!principal.master) {
      const workspace = await services.workspaces.find(principal.workspaceId!);
      if (!workspace) throw new AppError('unauthorized', 'Invalid API key');
      ctx.state.workspace = workspace;
    }
    // What the request changes is the key's doing, from this address, in the audit log.
    await actingAs({ type: 'api_key', id: principal.credentialId, address: ctx.state.clientAddress }, next);
  };
}

/** The workspace the request acts on: a master key's choice, checked; a workspace key's own. */
export function selectWorkspace(deps: HttpDeps, instanceWide: (ctx: Ctx) => boolean = () => false) {
  const { services } = deps;
  return async function selectWorkspaceMiddleware(ctx: Ctx, next: Next): Promise<void> {
    const principal = ctx.state.principal!;
    const requested = requestedWorkspace(ctx);
    // The instance's routes act on no workspace: a master key names none (the route refuses other keys).
    if (principal.master && !requested && instanceWide(ctx)) return next();
    if (principal.master) {
      if (!requested) {
        throw new AppError(
          'validation_error',
          'workspace_id: is required with a master key (X-Workspace-Id header, workspace_id query parameter or body field)',
          { field: 'workspace_id' },
        );
      }
      if (!isUuid(requested))
        throw new AppError('validation_error', 'workspace_id: must be a workspace id (uuid)', {
          field: 'workspace_id',
        });
      const workspace = await services.workspaces.find(requested);
      if (!workspace) throw new AppError('not_found', `Workspace ${requested} not found`);
      ctx.state.workspace = workspace;
    } else if (requested && requested !== principal.workspaceId) {
      throw new AppError('forbidden', 'This key has no access to that workspace');
    }
    await next();
  };
}
