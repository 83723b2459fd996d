import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import compose from 'koa-compose';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AppError, isAppError } from '../../shared/errors.js';
import type { Ctx, HttpDeps } from '../http/context.js';
import { authenticate, selectWorkspace } from '../http/middleware/authenticate.js';
import { parseBody } from '../http/middleware/parse-body.js';
import { lazyImport } from '../../shared/lazy-import.js';
import type { CallExtra, McpCaller } from './tool.js';
import type { CallOptions } from './call-tool.js';

const MCP_PATH = '/mcp';

/** The SDK and the tools, imported on the first request to /mcp (issue 34: an idle server without assistants does not hold them). */
const mcpModules = lazyImport(async () => {
  const [{ buildMcpServer }, { StreamableHTTPServerTransport }, { isInitializeRequest }] = await Promise.all([
    import('./build-server.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return { buildMcpServer, StreamableHTTPServerTransport, isInitializeRequest };
});
/** Open sessions one key may hold: an assistant needs one or two; more is a leak or an abuse. */
export const MAX_SESSIONS_PER_KEY = 10;
/** A session nobody has used for this long is closed (the client starts a new one: a 404 tells it to). */
const SESSION_IDLE_MS = 30 * 60_000;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  credentialId: string;
  workspaceId: string;
  lastUsed: number;
}

/** What the transport hands each call: who made the HTTP request that carried it. */
interface RequestAuth {
  caller: McpCaller;
  options: CallOptions;
}

interface McpEndpoint {
  middleware(ctx: Ctx, next: Next): Promise<void>;
  /** Open sessions (for tests and the stop). */
  readonly sessions: number;
  close(): Promise<void>;
}

/** The JSON-RPC error the protocol answers with outside any request (no id). */
const rpcError = (ctx: Ctx, status: number, code: number, message: string) => {
  ctx.status = status;
  ctx.body = { jsonrpc: '2.0', error: { code, message }, id: null };
};

/**
 * The Streamable HTTP transport of MCP at /mcp (POST a message, GET the server's stream,
 * DELETE to end the session), authenticated exactly as /v1: the same middleware resolves the
 * bearer key or `oat_` token and the workspace, and every request of a session must come
 * with the key that opened it. Browsers' cross-site requests are refused by Origin (the
 * protocol's DNS-rebinding rule). Sessions live in this process: a client whose session is
 * gone (restart, idle, another node) gets 404 and initializes again, as the protocol says.
 */
export function createMcpEndpoint(deps: HttpDeps, version: string): McpEndpoint {
  const sessions = new Map<string, Session>();
  const allowedOrigins = new Set([
    new URL(deps.config.http.publicUrl).origin,
    ...deps.config.mcp.allowedOrigins.map((o) => o.replace(/\/+$/, '')),
  ]);

  const callerOf = async (extra: CallExtra): Promise<McpCaller> => {
    const auth = extra.authInfo?.extra as RequestAuth | undefined;
    if (!auth) throw new AppError('unauthorized', 'No credentials with this call');
    return auth.caller;
  };
  const optionsOf = (extra: CallExtra): CallOptions =>
    (extra.authInfo?.extra as RequestAuth | undefined)?.options ?? {};

  const sweep = setInterval(() => {
    const now = deps.clock.now();
    for (const [id, s] of sessions) if (now - s.lastUsed > SESSION_IDLE_MS) void closeSession(id, s);
  }, 60_000);
  sweep.unref();

  async function closeSession(id: string, s: Session): Promise<void> {
    sessions.delete(id);
    await s.server
      .close()
      .catch((err: unknown) => deps.logger.debug({ err, component: 'mcp' }, 'closing an MCP session failed'));
  }

  async function openSession(principalId: string, workspaceId: string): Promise<Session> {
    const open = [...sessions.values()].filter((s) => s.credentialId === principalId).length;
    if (open >= MAX_SESSIONS_PER_KEY) {
      throw new AppError(
        'rate_limited',
        `This key has ${MAX_SESSIONS_PER_KEY} open MCP sessions: end one (DELETE ${MCP_PATH} with its Mcp-Session-Id) or let one expire`,
        { retryAfter: 60 },
      );
    }
    const { buildMcpServer, StreamableHTTPServerTransport } = await mcpModules();
    const server = buildMcpServer(deps, version, callerOf, optionsOf);
    // The transport's callbacks name the session, so it is made first and filled in below.
    const made: { session?: Session } = {};
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // The body was read and bounded by parseBody; answers are JSON, not a stream per POST:
      // every tool answers once, and proxies pass JSON more readily than event streams.
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        if (made.session) sessions.set(id, made.session);
      },
      // DELETE /mcp: the client ended it.
      onsessionclosed: (id) => {
        if (made.session) void closeSession(id, made.session);
      },
    });
    const session: Session = { server, transport, credentialId: principalId, workspaceId, lastUsed: deps.clock.now() };
    made.session = session;
    transport.onerror = (err) => deps.logger.debug({ err, component: 'mcp' }, 'MCP transport error');
    await server.connect(transport);
    return session;
  }

  async function handle(ctx: Ctx): Promise<void> {
    const principal = ctx.state.principal!;
    const workspace = ctx.state.workspace!;
    const id = ctx.get('Mcp-Session-Id');
    const { isInitializeRequest } = await mcpModules();
    let session: Session | undefined;
    if (id) {
      session = sessions.get(id);
      // Another key's session is as unknown to this one as a session that never was.
      if (!session || session.credentialId !== principal.credentialId || session.workspaceId !== workspace.id)
        return rpcError(ctx, 404, -32001, 'Session not found');
    } else if (ctx.method === 'POST' && isInitializeRequest(ctx.state.body)) {
      session = await openSession(principal.credentialId, workspace.id);
    } else {
      return rpcError(ctx, 400, -32000, 'Bad Request: no Mcp-Session-Id header; start with an initialize request');
    }
    session.lastUsed = deps.clock.now();
    const auth: RequestAuth = {
      caller: { principal, workspace },
      options: { requestId: ctx.state.requestId, userAgent: ctx.get('User-Agent') || null },
    };
    const req = Object.assign(ctx.req, {
      auth: { token: '', clientId: principal.credentialId, scopes: [], extra: { ...auth } },
    });
    // The transport writes the response itself.
    ctx.respond = false;
    await session.transport.handleRequest(req, ctx.res, ctx.state.body);
  }

  const pipeline = compose<Ctx>([
    authenticate(deps),
    parseBody(deps.config.http.bodyLimit),
    selectWorkspace(deps),
    handle,
  ]);

  return {
    get sessions() {
      return sessions.size;
    },
    async middleware(ctx, next) {
      if (ctx.path !== MCP_PATH || !deps.config.mcp.enabled) return next();
      if (!['POST', 'GET', 'DELETE'].includes(ctx.method)) {
        ctx.set('Allow', 'POST, GET, DELETE');
        throw new AppError(
          'method_not_allowed',
          `${ctx.method} is not allowed on ${MCP_PATH}; allowed: POST, GET, DELETE`,
        );
      }
      const origin = ctx.get('Origin');
      if (origin && !allowedOrigins.has(origin))
        throw new AppError('forbidden', `Origin ${origin} may not call ${MCP_PATH} (mcp.allowedOrigins)`);
      try {
        await pipeline(ctx);
      } catch (err) {
        // The protocol's authorization rule: a 401 says how to authenticate.
        if (isAppError(err) && err.code === 'unauthorized') {
          const presented = /^Bearer\s+\S/i.test(ctx.get('Authorization'));
          // resource_metadata (RFC 9728) is how an MCP client finds the authorization server with nothing but this URL.
          const metadata = deps.oauth ? `, resource_metadata="${deps.oauth.resourceMetadataUrl('mcp')}"` : '';
          ctx.set(
            'WWW-Authenticate',
            `Bearer realm="mailsvc"${presented ? ', error="invalid_token"' : ''}, error_description="an API key (sk_live_, sk_test_) or an access token (oat_)"${metadata}`,
          );
        }
        throw err;
      }
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions].map(([id, s]) => closeSession(id, s)));
    },
  };
}
