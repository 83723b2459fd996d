import type { ProviderCtx } from 'oidc-provider';
import { oidcProvider, type OidcErrors } from './oidc-provider.js';
import { ALL_SCOPES, newCredentialSecret } from '../../../services/credentials.js';
import { redirectUriProblem } from '../../../services/oauth.js';
import type { Next } from 'koa';
import type { Ctx, HttpDeps, OAuthServer } from '../context.js';

export type { OAuthServer } from '../context.js';
import { html } from '../dashboard/html.js';
import { plainPage } from '../dashboard/layout.js';
import { countAgainstLimit } from '../rate-limit.js';
import { isAppError } from '../../../shared/errors.js';
import { lazyImport } from '../../../shared/lazy-import.js';
import type { Provider as ProviderInstance } from 'oidc-provider';

/** Where the authorization server's endpoints live on the HTTP port. */
const OAUTH_PREFIX = '/oauth';
export const CONSENT_PATH = '/dashboard/oauth/consent';
/** Lifetimes, in seconds: a code is exchanged at once (and works once); an access token lasts an hour; a refresh token a month. */
const AUTHORIZATION_CODE_TTL = 60;
const ACCESS_TOKEN_TTL = 3600;
const REFRESH_TOKEN_TTL = 30 * 24 * 3600;
const INTERACTION_TTL = 15 * 60;

/** The scopes an app may ask for: the API's (a person approves a subset). */
export const OFFERED_SCOPES: readonly string[] = ALL_SCOPES;

const trimSlash = (url: string) => url.replace(/\/+$/, '');

type Resources = OAuthServer['resources'];

const ROUTES = {
  authorization: `${OAUTH_PREFIX}/authorize`,
  token: `${OAUTH_PREFIX}/token`,
  registration: `${OAUTH_PREFIX}/register`,
  revocation: `${OAUTH_PREFIX}/revoke`,
  introspection: `${OAUTH_PREFIX}/introspect`,
  jwks: `${OAUTH_PREFIX}/jwks`,
  userinfo: `${OAUTH_PREFIX}/userinfo`,
  end_session: `${OAUTH_PREFIX}/session/end`,
  pushed_authorization_request: `${OAUTH_PREFIX}/par`,
  code_verification: `${OAUTH_PREFIX}/device`,
  device_authorization: `${OAUTH_PREFIX}/device/auth`,
  backchannel_authentication: `${OAUTH_PREFIX}/backchannel`,
  challenge: `${OAUTH_PREFIX}/challenge`,
  credential: `${OAUTH_PREFIX}/credential`,
};

const TTL = {
  AccessToken: ACCESS_TOKEN_TTL,
  AuthorizationCode: AUTHORIZATION_CODE_TTL,
  RefreshToken: REFRESH_TOKEN_TTL,
  Grant: REFRESH_TOKEN_TTL,
  Interaction: INTERACTION_TTL,
  Session: 12 * 3600,
  IdToken: 3600,
};

/**
 * The OAuth 2.1 authorization server: oidc-provider (certified, on Koa) configured for
 * authorization code + PKCE S256 only, rotating refresh tokens, revocation, introspection and
 * dynamic registration, its state in our store (services/oauth.ts is its adapter). Access tokens
 * are `oat_` credentials: the provider's opaque token id is minted as an `oat_` secret and the
 * adapter writes it, hashed, to the credentials table the API authenticates against. The
 * provider is built on the first request that needs it; the protected-resource metadata does not.
 */
export function createOAuthServer(deps: HttpDeps): OAuthServer {
  const issuer = trimSlash(deps.config.http.publicUrl);
  const resources = { root: issuer, v1: `${issuer}/v1`, mcp: `${issuer}/mcp` };
  const built = lazyImport(async () => {
    const { Provider, errors } = await oidcProvider();
    const provider = new Provider(issuer, providerConfiguration(deps, resources, errors));
    provider.proxy = deps.config.http.trustProxy !== 0;
    mintOatAccessTokens(provider);
    logProviderEvents(provider, deps);
    listApiScopesInDiscovery(provider, issuer);
    return { provider, callback: provider.callback() };
  });
  return {
    provider: async () => (await built()).provider,
    resources,
    resourceMetadataUrl: (resource) => `${issuer}/.well-known/oauth-protected-resource/${resource}`,
    async middleware(ctx, next) {
      if (ctx.path.startsWith('/.well-known/oauth-protected-resource'))
        return serveProtectedResource(ctx, next, resources);
      if (!isProviderPath(ctx.path)) return next();
      const { provider, callback } = await built();
      if (ctx.path === ROUTES.registration && ctx.method === 'POST' && (await refuseOverRegistrationLimit(deps, ctx)))
        return;
      if (
        ctx.path === ROUTES.authorization &&
        ctx.method === 'GET' &&
        (await refuseUnofferedScope(provider, issuer, ctx))
      )
        return;
      // The provider answers on the raw request (its own Koa app): Koa must not answer again.
      ctx.respond = false;
      await callback(ctx.req, ctx.res);
    },
  };
}

function providerConfiguration(deps: HttpDeps, resources: Resources, errors: OidcErrors): Record<string, unknown> {
  const keys = deps.services.oauth.providerKeys();
  return {
    adapter: (name: string) => deps.services.oauth.adapter(name),
    clients: [],
    jwks: { keys: [keys.signingKey] },
    cookies: {
      keys: keys.cookieKeys,
      names: {
        session: 'mailsvc_oauth_session',
        interaction: 'mailsvc_oauth_interaction',
        resume: 'mailsvc_oauth_resume',
      },
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    enabledJWA: { idTokenSigningAlgValues: ['EdDSA'], requestObjectSigningAlgValues: ['EdDSA'] },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    },
    responseTypes: ['code'],
    grantTypes: ['authorization_code', 'refresh_token'],
    // The API's scopes are also the provider's own, so that a client may register with a `scope` (MCP clients do); tokens carry them per resource.
    scopes: ['openid', 'offline_access', ...ALL_SCOPES],
    claims: { openid: ['sub'] },
    pkce: { required: () => true },
    routes: ROUTES,
    ttl: TTL,
    // Every exchange and refresh rotates the refresh token; presenting a used one revokes the grant (oidc-provider's refresh_token grant).
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      revocation: { enabled: true },
      introspection: { enabled: true },
      registration: { enabled: true, idFactory: () => `mcl_${newCredentialSecret('oauth').slice(4, 36)}` },
      resourceIndicators: resourceIndicators(resources, errors),
    },
    extraClientMetadata: {
      properties: ['mailsvc_admin'],
      validator: (...args: ClientMetadataArgs) => validateClientMetadata(errors, ...args),
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `${CONSENT_PATH}/${interaction.uid}` },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    renderError,
  };
}

/** No resource named: the API. Tokens work on /v1 and /mcp alike (one credential). */
function resourceIndicators(resources: Resources, errors: OidcErrors) {
  const known = new Set([resources.root, `${resources.root}/`, resources.v1, resources.mcp]);
  return {
    enabled: true,
    defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string[]) => oneOf?.[0] ?? resources.v1,
    useGrantedResource: async () => true,
    getResourceServerInfo: async (_ctx: unknown, resource: string) => {
      if (!known.has(resource))
        throw new errors.InvalidTarget(`this server protects ${resources.v1} and ${resources.mcp}`);
      return {
        scope: OFFERED_SCOPES.join(' '),
        audience: resource,
        accessTokenTTL: ACCESS_TOKEN_TTL,
        accessTokenFormat: 'opaque',
      };
    },
  };
}

/** Called for every client, registered or read back; the redirect rule is the product's (services/oauth.ts). */
type ClientMetadataArgs = [
  ctx: ProviderCtx | undefined,
  key: string,
  value: unknown,
  metadata: { redirect_uris?: string[]; token_endpoint_auth_method?: string },
];

function validateClientMetadata(errors: OidcErrors, ...[ctx, key, value, metadata]: ClientMetadataArgs): void {
  if (key !== 'mailsvc_admin') return;
  if (ctx?.oidc?.route === 'registration') {
    if (value !== undefined) throw new errors.InvalidClientMetadata('mailsvc_admin is set by the server only');
    // Registration is for public clients (PKCE); a confidential client is created by an admin.
    if (metadata.token_endpoint_auth_method !== 'none')
      throw new errors.InvalidClientMetadata(
        'token_endpoint_auth_method must be none: registered clients are public; an admin creates confidential ones (mailsvc oauth clients create)',
      );
  }
  for (const uri of metadata.redirect_uris ?? []) {
    const problem = redirectUriProblem(uri);
    if (problem) {
      const err = new errors.InvalidRedirectUri();
      err.error_description = problem;
      throw err;
    }
  }
}

function renderError(ctx: ProviderCtx, out: { error: string; error_description?: string }): void {
  ctx.type = 'html';
  ctx.body = plainPage(
    'Authorization failed',
    html`<div class="card"><h1>The app's request was refused</h1><div class="error" role="alert">${out.error}: ${out.error_description ?? ''}</div><p class="muted">Go back to the app and try connecting again.</p></div>`,
  );
}

/**
 * The provider's opaque access token id is the token itself: make it an `oat_` secret, which the API already accepts.
 * Every resource server here is opaque-format (getResourceServerInfo), which the provider records on the token as it mints the id.
 */
function mintOatAccessTokens(provider: ProviderInstance): void {
  provider.AccessToken.prototype.generateTokenId = function generateOatId(this: { format?: string }) {
    this.format = 'opaque';
    return newCredentialSecret('oauth');
  };
}

function logProviderEvents(provider: ProviderInstance, deps: HttpDeps): void {
  const log = deps.logger.child({ component: 'oauth' });
  provider.on('server_error', (_ctx: unknown, err: unknown) => log.error({ err }, 'authorization server error'));
  // Refused requests are the client's to fix; the reason, at debug level, is the operator's to read.
  for (const event of [
    'grant.error',
    'authorization.error',
    'registration_create.error',
    'revocation.error',
    'introspection.error',
  ]) {
    provider.on(event, (_ctx: unknown, err: { error?: string; error_description?: string; error_detail?: string }) =>
      log.debug(
        { event, error: err.error, description: err.error_description, detail: err.error_detail },
        'authorization request refused',
      ),
    );
  }
  provider.on('grant.revoked', (_ctx: unknown, grantId: string) => {
    deps.services.oauth
      .endProviderGrant(grantId)
      .catch((err: unknown) => log.warn({ err }, 'could not record a revoked grant'));
  });
}

/** RFC 8414 and OpenID discovery list the scopes of the API, not only the provider's own. */
function listApiScopesInDiscovery(provider: ProviderInstance, issuer: string): void {
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.method === 'GET' && ctx.path.startsWith('/.well-known/') && ctx.status === 200 && isRecord(ctx.body)) {
      ctx.body.scopes_supported = [...OFFERED_SCOPES, 'offline_access'];
      ctx.body.service_documentation = `${issuer}/docs/assistants.md`;
    }
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** /oauth/grants is the API's (Resend's oauthGrants at the root alias of /v1/oauth/grants), not the provider's. */
function isProviderPath(path: string): boolean {
  const apiAlias = path === `${OAUTH_PREFIX}/grants` || path.startsWith(`${OAUTH_PREFIX}/grants/`);
  return (
    !apiAlias &&
    (path.startsWith(`${OAUTH_PREFIX}/`) ||
      path === '/.well-known/oauth-authorization-server' ||
      path === '/.well-known/openid-configuration')
  );
}

/** RFC 9728 metadata of the API and the MCP endpoint. */
function serveProtectedResource(ctx: Ctx, next: Next, resources: Resources): Promise<void> | void {
  const which = ctx.path.slice('/.well-known/oauth-protected-resource'.length);
  const body =
    which === '' || which === '/'
      ? protectedResource(resources, resources.root, 'mailsvc API')
      : which === '/v1'
        ? protectedResource(resources, resources.v1, 'mailsvc API')
        : which === '/mcp'
          ? protectedResource(resources, resources.mcp, 'mailsvc MCP server')
          : undefined;
  if (!body || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Cache-Control', 'public, max-age=3600');
  ctx.body = body;
}

const protectedResource = (resources: Resources, resource: string, name: string) => ({
  resource,
  authorization_servers: [resources.root],
  scopes_supported: OFFERED_SCOPES,
  bearer_methods_supported: ['header'],
  resource_name: name,
  resource_documentation: `${resources.root}/docs/api.md`,
});

/** Dynamic registrations are counted per client address; over the limit, a 429 in OAuth's own error shape. */
async function refuseOverRegistrationLimit(deps: HttpDeps, ctx: Ctx): Promise<boolean> {
  try {
    await countAgainstLimit(deps, 'oauth.register', `ip:${ctx.state.clientAddress}`, null, (d) => {
      ctx.set('X-RateLimit-Limit', String(d.limit));
      ctx.set('X-RateLimit-Remaining', String(d.remaining));
    });
    return false;
  } catch (err) {
    const retryAfter = isAppError(err) ? err.retryAfter : undefined;
    ctx.status = 429;
    if (retryAfter !== undefined) ctx.set('Retry-After', String(retryAfter));
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      error: 'temporarily_unavailable',
      error_description: `too many client registrations from this address; retry after ${retryAfter ?? 60} s`,
    };
    return true;
  }
}

const OFFERED = new Set([...OFFERED_SCOPES, 'openid', 'offline_access']);

/**
 * oidc-provider drops scopes no resource offers; OAuth says `invalid_scope`, sent to the
 * app's redirect URI once the client and that URI are known to be its (RFC 6749 §4.1.2.1).
 * Anything else wrong with the request is left to the provider's own checks.
 */
async function refuseUnofferedScope(provider: ProviderInstance, issuer: string, ctx: Ctx): Promise<boolean> {
  const { scope, client_id: clientId, redirect_uri: redirectUri, state } = ctx.query;
  if (typeof scope !== 'string' || typeof clientId !== 'string') return false;
  const unknown = scope.split(' ').find((s) => s !== '' && !OFFERED.has(s));
  if (unknown === undefined) return false;
  const client = await provider.Client.find(clientId).catch(() => undefined);
  const target =
    typeof redirectUri === 'string'
      ? redirectUri
      : client?.redirectUris.length === 1
        ? client.redirectUris[0]
        : undefined;
  if (!client || !target || !client.redirectUris.includes(target)) return false;
  const back = new URL(target);
  back.searchParams.set('error', 'invalid_scope');
  back.searchParams.set(
    'error_description',
    `scope ${unknown.slice(0, 100)} is not offered; see scopes_supported in /.well-known/oauth-authorization-server`,
  );
  if (typeof state === 'string') back.searchParams.set('state', state);
  back.searchParams.set('iss', issuer);
  ctx.status = 303;
  ctx.redirect(back.href);
  return true;
}
