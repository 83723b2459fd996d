import type { Next, ParameterizedContext } from 'koa';
import type Provider from 'oidc-provider';
import type { Principal, Surface } from '../../services/credentials.js';
import type { Services } from '../../services/index.js';
import type { Config } from '../../config/schema.js';
import type { Logger } from '../../shared/logger.js';
import type { Clock } from '../../shared/clock.js';
import type { Workspace } from '../../store/workspaces.js';
import type { ServerMetrics } from '../../observability/metrics.js';
import type { Readiness } from '../../observability/readiness.js';

/** What the HTTP adapter needs from the composition root. */
export interface HttpDeps {
  services: Services;
  config: Config;
  logger: Logger;
  clock: Clock;
  /** Whether this node should get traffic: the database answers, the disk is above its reserve (/readyz). */
  ready(): Promise<Readiness>;
  /** Served at GET /metrics; absent when metrics.enabled is false. */
  metrics?: ServerMetrics | undefined;
  /**
   * The Model Context Protocol at /mcp (intake/mcp builds it over this adapter, so it is named
   * here only by the shape the app mounts); absent: no /mcp (mcp.enabled false, or an app built without it).
   */
  mcp?: { middleware(ctx: Ctx, next: Next): Promise<void> } | undefined;
  /** The OAuth authorization server (/oauth, /.well-known/…; intake/http/oauth builds it); built by createHttpApp when absent. */
  oauth?: OAuthServer | undefined;
}

/** The OAuth authorization server as the adapter and its pages use it (intake/http/oauth/provider.ts builds it). */
export interface OAuthServer {
  /** Built on first use: oidc-provider is imported then (issue 34). */
  provider(): Promise<Provider>;
  /** The resources tokens are for: the API (/v1 and the root aliases) and the MCP endpoint. */
  resources: { root: string; v1: string; mcp: string };
  /** The URL of a resource's RFC 9728 metadata, for WWW-Authenticate. */
  resourceMetadataUrl(resource: 'v1' | 'mcp'): string;
  middleware(ctx: Ctx, next: Next): Promise<void>;
}

export interface State {
  requestId: string;
  /** The client's address, behind the trusted proxies (client-address.ts): the only one to use. */
  clientAddress: string;
  surface: Surface;
  /** The parsed JSON body (undefined when the request had none). */
  body: unknown;
  /** The body's bytes as received: idempotency compares these. */
  rawBody: string | undefined;
  principal?: Principal;
  workspace?: Workspace;
}

export type Ctx = ParameterizedContext<State>;

export const surfaceOf = (path: string): Surface => (path === '/api' || path.startsWith('/api/') ? 'legacy' : 'v1');

export const isApiPath = (path: string): boolean => /^\/(api\/)?v1(\/|$)/.test(path);
