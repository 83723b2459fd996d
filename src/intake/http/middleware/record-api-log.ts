import type { Next } from 'koa';
import { isApiPath, type Ctx, type HttpDeps } from '../context.js';

/**
 * Records every authenticated API request of a workspace once it is answered, errors included
 * (this runs outside renderErrors, so it sees the rendered error): Resend's `logs`. Reading the
 * logs themselves is not recorded. The row is written after the answer, in the batcher's
 * background lane; a failure to write it is logged, never the client's problem.
 */
export function recordApiLog(deps: HttpDeps) {
  return async function apiLog(ctx: Ctx, next: Next): Promise<void> {
    const path = ctx.path;
    const method = ctx.method;
    await next();
    const workspace = ctx.state.workspace;
    if (!workspace || !isApiPath(ctx.path) || (method === 'GET' && /^\/v1\/logs(\/|$)/.test(ctx.path))) return;
    deps.services.apiLogs
      .record({
        workspaceId: workspace.id,
        credentialId: ctx.state.principal?.credentialId ?? null,
        requestId: ctx.state.requestId ?? null,
        method,
        endpoint: path,
        status: ctx.status,
        userAgent: ctx.get('User-Agent') || null,
        requestBody: ctx.state.body,
        responseBody: ctx.body,
      })
      .catch((err: unknown) =>
        deps.logger.warn(
          { err, component: 'api-logs', workspaceId: workspace.id },
          'could not record an API request log',
        ),
      );
  };
}
