import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oauth from 'oauth4webapi';
import { Resend } from 'resend';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { runCliProcess } from '../helpers/cli.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { failed, ok } from '../helpers/resend.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';
import { runRetention } from '../../src/tasks/retention.js';
import { freePort } from '../helpers/http.js';
import { generateSync } from 'otplib';

/**
 * The OAuth 2.1 authorization server on a real server on loopback, driven by a certified-style
 * client library (oauth4webapi) and a person signed in to the dashboard: discovery from a 401,
 * dynamic registration, consent, the code exchange with PKCE, the token on /v1 and /mcp,
 * refresh with rotation, revocation; then every bad input the issue names.
 */

const insecure = { [oauth.allowInsecureRequests]: true } as const;
const PASSWORD = 'correct horse battery staple';

/** A server whose public URL is its own loopback address: the issuer the client checks. */
async function oauthServer(
  overrides: Record<string, unknown> = {},
  options: Parameters<typeof startTestServer>[1] = {},
): Promise<TestServer> {
  const port = await freePort();
  return startTestServer({ ...overrides, http: { port, publicUrl: `http://127.0.0.1:${port}` } }, options);
}

const pathOf = (location: string) => {
  const url = new URL(location);
  return url.pathname + url.search;
};

async function signedIn(server: TestServer, email: string): Promise<DashboardClient> {
  await server.runtime.services.users.create({
    email,
    password: PASSWORD,
    workspaceId: server.workspaceId,
    role: 'owner',
  });
  const dash = new DashboardClient(server.httpUrl);
  const form = await dash.get('/dashboard/login');
  const res = await dash.post('/dashboard/login', {
    _csrf: form.csrf ?? '',
    email,
    password: PASSWORD,
    next: '/dashboard',
  });
  assert.equal(res.status, 303, res.text.slice(0, 300));
  return dash;
}

interface Registered {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  redirectUri: string;
}

async function discoverAndRegister(server: TestServer, name = 'Test assistant'): Promise<Registered> {
  // Discovery from a 401, as an MCP client does: WWW-Authenticate → resource metadata → the authorization server.
  const denied = await fetch(`${server.httpUrl}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: '{}',
  });
  assert.equal(denied.status, 401);
  const challenge = denied.headers.get('www-authenticate') ?? '';
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  assert.ok(metadataUrl, challenge);
  const resource = await oauth.processResourceDiscoveryResponse(
    new URL(`${server.config.http.publicUrl}/mcp`),
    await fetch(metadataUrl),
  );
  const issuer = new URL(resource.authorization_servers![0]!);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
  assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
  assert.ok(as.scopes_supported?.includes('emails:send'));

  const redirectUri = 'http://127.0.0.1:53682/callback';
  const registered = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: name,
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
      insecure,
    ),
  );
  return { as, client: { client_id: registered.client_id, token_endpoint_auth_method: 'none' }, redirectUri };
}

interface Started {
  url: URL;
  state: string;
  verifier: string;
}

async function authorizationUrl(reg: Registered, scope: string, extra: Record<string, string> = {}): Promise<Started> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(reg.as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: reg.client.client_id,
    redirect_uri: reg.redirectUri,
    response_type: 'code',
    scope,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  }).toString();
  return { url, state, verifier };
}

/** Follows the authorization request through consent as the signed-in person; returns where the browser lands (the app's redirect URI). */
async function consent(
  dash: DashboardClient,
  started: Started,
  answer: { decision?: 'approve' | 'refuse'; scopes?: string[]; workspace: string },
): Promise<URL> {
  const first = await dash.get(pathOf(started.url.href));
  assert.equal(first.status, 303, first.text.slice(0, 300));
  const next = new URL(first.headers.get('location')!, started.url);
  // Consent already given to this client in this browser session, for these scopes: straight back to the app.
  if (next.port === '53682') return next;
  const consentPath = pathOf(next.href);
  assert.match(consentPath, /^\/dashboard\/oauth\/consent\//);
  const page = await dash.get(consentPath);
  assert.equal(page.status, 200, page.text.slice(0, 300));
  const fields: Record<string, string> = {
    _csrf: page.csrf ?? '',
    decision: answer.decision ?? 'approve',
    workspace: answer.workspace,
  };
  for (const s of answer.scopes ?? []) fields[`scope_${s}`] = '1';
  let res = await dash.post(consentPath, fields);
  assert.equal(res.status, 303, /role="alert">([^<]*)/.exec(res.text)?.[1] ?? res.text.slice(-1500));
  let location = new URL(res.headers.get('location')!, started.url);
  while (location.port !== '53682') {
    res = await dash.get(pathOf(location.href));
    assert.ok(res.status === 303 || res.status === 302, `${res.status} ${res.text.slice(0, 300)}`);
    location = new URL(res.headers.get('location')!, location);
  }
  return location;
}

async function exchange(
  reg: Registered,
  started: Started,
  landed: URL,
  verifier = started.verifier,
): Promise<Response> {
  const params = oauth.validateAuthResponse(reg.as, reg.client, landed, started.state);
  return oauth.authorizationCodeGrantRequest(
    reg.as,
    reg.client,
    oauth.None(),
    params,
    reg.redirectUri,
    verifier,
    insecure,
  );
}

const tokenError = async (res: Response): Promise<{ status: number; error: string }> => ({
  status: res.status,
  error: ((await res.json()) as { error: string }).error,
});
/** The token response, or a failure that shows the server's error. */
async function tokensOf(reg: Registered, res: Response): Promise<oauth.TokenEndpointResponse> {
  if (res.status !== 200) assert.fail(`${res.status} ${await res.text()}`);
  return oauth.processAuthorizationCodeResponse(reg.as, reg.client, res);
}

/** What an MCP host keeps for one server: the SDK's client auth provider, with the browser step left to the test. */
class HostAuth implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  readonly redirectUrl = 'http://127.0.0.1:53682/callback';
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'An MCP host',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describe('OAuth 2.1 authorization server', () => {
  let server: TestServer;
  let dns: TestDns;
  let dash: DashboardClient;
  let apiKey: string;
  const clock = manualClock();

  before(async () => {
    dns = await startDnsServer();
    server = await oauthServer({ delivery: { dnsServers: [dns.server] } }, { clock });
    await addVerifiedDomain(server, dns, 'oauth.test');
    dash = await signedIn(server, 'ann@oauth.test');
    apiKey = await server.key();
  });
  after(async () => {
    await server?.close();
    await dns?.close();
  });

  it('publishes RFC 8414 and RFC 9728 metadata, and a 401 from /v1 names the resource metadata', async () => {
    const as = (await (await fetch(`${server.httpUrl}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(as.issuer, server.config.http.publicUrl);
    assert.deepEqual(as.response_types_supported, ['code']);
    assert.deepEqual(as.grant_types_supported, ['authorization_code', 'refresh_token']);
    for (const key of ['registration_endpoint', 'revocation_endpoint', 'introspection_endpoint', 'token_endpoint'])
      assert.ok(typeof as[key] === 'string', key);
    const v1 = (await (await fetch(`${server.httpUrl}/.well-known/oauth-protected-resource/v1`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(v1.resource, `${server.config.http.publicUrl}/v1`);
    assert.deepEqual(v1.authorization_servers, [server.config.http.publicUrl]);
    const res = await fetch(`${server.httpUrl}/v1/emails`);
    assert.equal(res.status, 401);
    assert.equal(
      res.headers.get('www-authenticate'),
      `Bearer resource_metadata="${server.config.http.publicUrl}/.well-known/oauth-protected-resource/v1"`,
    );
  });

  it('runs the whole flow: register, consent, PKCE exchange, /v1 and /mcp, refresh, revoke', async () => {
    const reg = await discoverAndRegister(server);
    const started = await authorizationUrl(reg, 'emails:send emails:read domains:read offline_access', {
      resource: `${server.config.http.publicUrl}/mcp`,
    });
    const landed = await consent(dash, started, {
      workspace: server.workspaceId,
      scopes: ['emails:send', 'emails:read'],
    });
    const tokens = await tokensOf(reg, await exchange(reg, started, landed));
    assert.match(tokens.access_token, /^oat_[A-Za-z0-9]{43}$/);
    assert.ok(tokens.refresh_token);
    assert.equal(tokens.scope?.split(' ').sort().join(' '), 'emails:read emails:send');

    // Hashed at rest: the secret is nowhere in the store.
    const stored = await server.runtime.store.db
      .selectFrom('credentials')
      .select(['secret_hash', 'scopes', 'workspace_id'])
      .where('kind', '=', 'oauth')
      .execute();
    assert.ok(!JSON.stringify(stored).includes(tokens.access_token));
    const models = await server.runtime.store.db.selectFrom('oauth_models').select(['id', 'payload']).execute();
    assert.ok(
      !JSON.stringify(models).includes(tokens.access_token) && !JSON.stringify(models).includes(tokens.refresh_token),
    );

    const resend = new Resend(tokens.access_token, { baseUrl: `${server.httpUrl}/v1` });
    const sent = ok(
      await resend.emails.send({
        from: 'app@oauth.test',
        to: 'bob@example.test',
        subject: 'Hello from an app',
        text: 'hi',
      }),
      'emails.send with the OAuth token',
    );
    assert.ok(sent.id);
    failed(await resend.domains.list(), 403, 'invalid_access', /lacks the scope domains:read/);

    const mcp = new McpClient({ name: 'oauth-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${server.httpUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } },
      }),
    );
    const listed = await mcp.callTool({ name: 'emails_list', arguments: {} });
    assert.notEqual(listed.isError, true, JSON.stringify(listed).slice(0, 300));
    await mcp.close();

    // Introspection (for our own use) knows the token.
    const introspected = await oauth.processIntrospectionResponse(
      reg.as,
      reg.client,
      await oauth.introspectionRequest(reg.as, reg.client, oauth.None(), tokens.access_token, insecure),
    );
    assert.equal(introspected.active, true);

    // Refresh: a new pair; the old refresh token is spent.
    const refreshed = await oauth.processRefreshTokenResponse(
      reg.as,
      reg.client,
      await oauth.refreshTokenGrantRequest(reg.as, reg.client, oauth.None(), tokens.refresh_token, insecure),
    );
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
    assert.match(refreshed.access_token, /^oat_/);
    ok(
      await new Resend(refreshed.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(),
      'the refreshed token works',
    );

    // The grant is the person's and the workspace's: listed with the real client.
    const admin = new Resend(apiKey, { baseUrl: `${server.httpUrl}/v1` });
    const grants = ok(await admin.oauthGrants.list(), 'oauthGrants.list');
    const grant = grants.data.find((g) => g.client_id === reg.client.client_id)!;
    assert.equal(grant.client.name, 'Test assistant');
    assert.deepEqual([...grant.scopes].sort(), ['emails:read', 'emails:send']);
    assert.ok((grant as { last_used_at?: string | null }).last_used_at, 'last used: the token was used');

    // Revocation (RFC 7009) of the access token: refused from then on, and (oidc-provider's rule) the grant's refresh tokens with it.
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(reg.as, reg.client, oauth.None(), refreshed.access_token, insecure),
    );
    failed(
      await new Resend(refreshed.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(),
      401,
      'invalid_api_key',
    );
    assert.deepEqual(
      await tokenError(
        await oauth.refreshTokenGrantRequest(reg.as, reg.client, oauth.None(), refreshed.refresh_token!, insecure),
      ),
      { status: 400, error: 'invalid_grant' },
    );

    // The person's consent stands: the app gets new tokens without asking again, until the grant is revoked (oauthGrants.revoke).
    const again = await authorizationUrl(reg, 'emails:send emails:read', {
      resource: `${server.config.http.publicUrl}/mcp`,
    });
    const tokens2 = await tokensOf(
      reg,
      await exchange(
        reg,
        again,
        await consent(dash, again, { workspace: server.workspaceId, scopes: ['emails:send', 'emails:read'] }),
      ),
    );
    ok(
      await new Resend(tokens2.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(),
      'a new token under the same grant',
    );
    const current = ok(await admin.oauthGrants.list(), 'oauthGrants.list').data.find(
      (g) => g.client_id === reg.client.client_id && g.revoked_at === null,
    )!;
    ok(await admin.oauthGrants.revoke(current.id), 'oauthGrants.revoke');
    failed(
      await new Resend(tokens2.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(),
      401,
      'invalid_api_key',
    );
    assert.deepEqual(
      await tokenError(
        await oauth.refreshTokenGrantRequest(reg.as, reg.client, oauth.None(), tokens2.refresh_token!, insecure),
      ),
      { status: 400, error: 'invalid_grant' },
    );
    assert.ok(ok(await admin.oauthGrants.list(), 'oauthGrants.list').data.find((g) => g.id === current.id)!.revoked_at);

    const audit = (await (
      await fetch(`${server.httpUrl}/v1/audit-log?object_id=${current.id}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      })
    ).json()) as { data: Array<{ action: string; actor: { type: string } }> };
    assert.deepEqual(
      audit.data.map((e) => `${e.action} by ${e.actor.type}`),
      ['oauth_grant.revoked by api_key', 'oauth_grant.created by user'],
    );
  });

  it('a confidential client made by an admin (CLI) authenticates with its secret; the dashboard lists and revokes its grant; removing it ends the rest', async () => {
    const env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
    const made = await runCliProcess(
      [
        'oauth',
        'clients',
        'create',
        '--name',
        'Shop backend',
        '--redirect-uri',
        'https://shop.example/oauth/callback',
        '--redirect-uri',
        'http://127.0.0.1:53682/callback',
        '--confidential',
        '--json',
      ],
      env,
    );
    assert.equal(made.code, 0, made.stderr);
    const created = JSON.parse(made.stdout) as {
      client: { client_id: string; token_endpoint_auth_method: string };
      secret: string;
    };
    assert.equal(created.client.token_endpoint_auth_method, 'client_secret_basic');
    assert.match(created.secret, /^mcs_/);
    const stored = await server.runtime.store.db
      .selectFrom('oauth_models')
      .select('payload')
      .where('model', '=', 'Client')
      .where('id', '=', created.client.client_id)
      .executeTakeFirstOrThrow();
    assert.ok(!stored.payload.includes(created.secret), 'the secret is sealed at rest');
    const refused = await runCliProcess(
      ['oauth', 'clients', 'create', '--name', 'Bad', '--redirect-uri', 'http://shop.example/cb'],
      env,
    );
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /https, or http on a loopback/);

    const as = await oauth.processDiscoveryResponse(
      new URL(server.config.http.publicUrl),
      await oauth.discoveryRequest(new URL(server.config.http.publicUrl), { algorithm: 'oauth2', ...insecure }),
    );
    const reg: Registered = {
      as,
      client: { client_id: created.client.client_id },
      redirectUri: 'http://127.0.0.1:53682/callback',
    };
    const started = await authorizationUrl(reg, 'emails:read');
    const landed = await consent(dash, started, { workspace: server.workspaceId, scopes: ['emails:read'] });
    const params = oauth.validateAuthResponse(as, reg.client, landed, started.state);
    const wrong = await oauth.authorizationCodeGrantRequest(
      as,
      reg.client,
      oauth.ClientSecretBasic('mcs_wrong'),
      params,
      reg.redirectUri,
      started.verifier,
      insecure,
    );
    assert.deepEqual(await tokenError(wrong), { status: 401, error: 'invalid_client' });
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      reg.client,
      await oauth.authorizationCodeGrantRequest(
        as,
        reg.client,
        oauth.ClientSecretBasic(created.secret),
        params,
        reg.redirectUri,
        started.verifier,
        insecure,
      ),
    );
    ok(await new Resend(tokens.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(), 'the token works');

    const apps = await dash.get('/dashboard/oauth');
    assert.equal(apps.status, 200);
    assert.match(apps.text, /Shop backend/);
    const revokePath = new RegExp(`action="(/dashboard/oauth/grants/[0-9a-f-]+/revoke)"`).exec(
      apps.text.slice(apps.text.indexOf('Shop backend')),
    )?.[1];
    assert.ok(revokePath);
    assert.equal((await dash.post(revokePath, { _csrf: apps.csrf! })).status, 303);
    failed(
      await new Resend(tokens.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(),
      401,
      'invalid_api_key',
    );

    const listed = await runCliProcess(['oauth', 'clients', 'list'], env);
    assert.match(listed.stdout, /Shop backend .*confidential .*admin/);
    const removed = await runCliProcess(['oauth', 'clients', 'remove', created.client.client_id], env);
    assert.equal(removed.code, 0, removed.stderr);
    const gone = await fetch(started.url, { redirect: 'manual' });
    assert.equal(gone.status, 400);
    assert.match(await gone.text(), /invalid_client/);
  });

  it("the MCP SDK's client auth provider connects with nothing but the /mcp URL and a person's consent", async () => {
    const auth = new HostAuth();
    const url = new URL(`${server.config.http.publicUrl}/mcp`);
    const first = new McpClient({ name: 'host', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(url, { authProvider: auth });
    await assert.rejects(first.connect(transport), UnauthorizedError);
    assert.ok(auth.info?.client_id, 'registered itself');
    assert.ok(auth.authorizationUrl, 'sent the person to authorize');
    assert.equal(auth.authorizationUrl.searchParams.get('resource'), url.href);
    const landed = await consent(
      dash,
      {
        url: auth.authorizationUrl,
        state: auth.authorizationUrl.searchParams.get('state') ?? '',
        verifier: auth.verifier,
      },
      { workspace: server.workspaceId, scopes: ['emails:read', 'domains:read'] },
    );
    await transport.finishAuth(landed.searchParams.get('code')!);
    assert.match(auth.saved!.access_token, /^oat_/);

    const client = new McpClient({ name: 'host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: auth }));
    const listed = await client.callTool({ name: 'domains_list', arguments: {} });
    assert.notEqual(listed.isError, true, JSON.stringify(listed).slice(0, 300));
    await client.close();
  });

  it('refresh-token reuse revokes the whole family', async () => {
    const reg = await discoverAndRegister(server, 'Reuser');
    const started = await authorizationUrl(reg, 'emails:read offline_access');
    const tokens = await tokensOf(
      reg,
      await exchange(
        reg,
        started,
        await consent(dash, started, { workspace: server.workspaceId, scopes: ['emails:read'] }),
      ),
    );
    const next = await oauth.processRefreshTokenResponse(
      reg.as,
      reg.client,
      await oauth.refreshTokenGrantRequest(reg.as, reg.client, oauth.None(), tokens.refresh_token!, insecure),
    );
    assert.deepEqual(
      await tokenError(
        await oauth.refreshTokenGrantRequest(reg.as, reg.client, oauth.None(), tokens.refresh_token!, insecure),
      ),
      { status: 400, error: 'invalid_grant' },
    );
    failed(
      await new Resend(next.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(),
      401,
      'invalid_api_key',
    );
    assert.deepEqual(
      await tokenError(
        await oauth.refreshTokenGrantRequest(reg.as, reg.client, oauth.None(), next.refresh_token!, insecure),
      ),
      { status: 400, error: 'invalid_grant' },
    );
  });

  it('a refused consent sends access_denied back to the app', async () => {
    const reg = await discoverAndRegister(server, 'Refused');
    const started = await authorizationUrl(reg, 'emails:read');
    const landed = await consent(dash, started, { workspace: server.workspaceId, decision: 'refuse' });
    assert.equal(landed.searchParams.get('error'), 'access_denied');
    assert.equal(landed.searchParams.get('state'), started.state);
  });

  it('a workspace that requires two-factor sign-in: a member who has not set it up cannot grant an app access to it', async () => {
    // Another owner, enrolled, requires it of everyone; Ann (signed in above) has no second factor.
    const other = await server.runtime.services.users.create({
      email: 'olu@oauth.test',
      password: PASSWORD,
      workspaceId: server.workspaceId,
      role: 'owner',
    });
    const who = { userId: other.id, workspaceId: server.workspaceId };
    const { secret } = await server.runtime.services.twoFactor.enrolment(other.id);
    await server.runtime.services.twoFactor.confirm(
      who,
      generateSync({ secret, epoch: Math.floor(clock.now() / 1000) }),
    );
    await server.runtime.services.twoFactor.setRequired(who, true);
    try {
      const reg = await discoverAndRegister(server, 'Before enrolment');
      const started = await authorizationUrl(reg, 'emails:read');
      const first = await dash.get(pathOf(started.url.href));
      assert.equal(first.status, 303);
      const consentPath = pathOf(new URL(first.headers.get('location')!, started.url).href);
      const page = await dash.get(consentPath);
      assert.equal(page.status, 403, page.text.slice(0, 300));
      assert.match(page.text, /requires two-factor sign-in/);
      const answer = await dash.post(consentPath, {
        _csrf: page.csrf ?? '',
        decision: 'approve',
        workspace: server.workspaceId,
        'scope_emails:read': '1',
      });
      assert.equal(answer.status, 403, 'approving is refused too');
      const grants = await server.runtime.services.oauth.listGrants(
        { workspaceId: server.workspaceId },
        { limit: 100, offset: 0 },
      );
      assert.equal(
        grants.items.some((g) => g.client.name === 'Before enrolment'),
        false,
        'no grant was made',
      );
    } finally {
      await server.runtime.services.twoFactor.setRequired(who, false);
    }
    // Once it is no longer required (or once she enrols), she can.
    const reg = await discoverAndRegister(server, 'After');
    const started = await authorizationUrl(reg, 'emails:read');
    const landed = await consent(dash, started, { workspace: server.workspaceId, scopes: ['emails:read'] });
    assert.ok(landed.searchParams.get('code'));
  });

  describe('bad input gets the standard OAuth errors, never a 500', () => {
    let reg: Registered;
    before(async () => {
      reg = await discoverAndRegister(server, 'Bad inputs');
    });

    it('unknown client: the authorization endpoint refuses without redirecting; the token endpoint says invalid_client', async () => {
      const started = await authorizationUrl(
        { ...reg, client: { client_id: 'mcl_nope', token_endpoint_auth_method: 'none' } },
        'emails:read',
      );
      const res = await fetch(started.url, { redirect: 'manual' });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /invalid_client/);
      const token = await fetch(reg.as.token_endpoint!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: 'x',
          client_id: 'mcl_nope',
          redirect_uri: reg.redirectUri,
          code_verifier: 'a'.repeat(43),
        }),
      });
      assert.deepEqual(await tokenError(token), { status: 401, error: 'invalid_client' });
    });

    it('a redirect URI that is not registered is refused on the page, not followed', async () => {
      const started = await authorizationUrl({ ...reg, redirectUri: 'http://127.0.0.1:53682/other' }, 'emails:read');
      const res = await fetch(started.url, { redirect: 'manual' });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /redirect_uri/);
    });

    it('no PKCE challenge: invalid_request to the app; a wrong verifier or none at the token endpoint: invalid_grant', async () => {
      const started = await authorizationUrl(reg, 'emails:read');
      const noPkce = new URL(started.url);
      noPkce.searchParams.delete('code_challenge');
      noPkce.searchParams.delete('code_challenge_method');
      const res = await fetch(noPkce, { redirect: 'manual' });
      const back = new URL(res.headers.get('location')!);
      assert.equal(back.searchParams.get('error'), 'invalid_request');
      assert.match(back.searchParams.get('error_description') ?? '', /PKCE/);

      const plain = new URL(started.url);
      plain.searchParams.set('code_challenge_method', 'plain');
      const plainBack = new URL((await fetch(plain, { redirect: 'manual' })).headers.get('location')!);
      assert.equal(plainBack.searchParams.get('error'), 'invalid_request');

      const landed = await consent(dash, started, { workspace: server.workspaceId, scopes: ['emails:read'] });
      assert.deepEqual(await tokenError(await exchange(reg, started, landed, oauth.generateRandomCodeVerifier())), {
        status: 400,
        error: 'invalid_grant',
      });
      const started2 = await authorizationUrl(reg, 'emails:read');
      const landed2 = await consent(dash, started2, { workspace: server.workspaceId, scopes: ['emails:read'] });
      const missing = await fetch(reg.as.token_endpoint!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: landed2.searchParams.get('code')!,
          client_id: reg.client.client_id,
          redirect_uri: reg.redirectUri,
        }),
      });
      assert.equal(missing.status, 400);
      assert.ok(['invalid_request', 'invalid_grant'].includes(((await missing.json()) as { error: string }).error));
    });

    it('a code works once: reusing it is invalid_grant and revokes what it issued', async () => {
      const started = await authorizationUrl(reg, 'emails:read');
      const landed = await consent(dash, started, { workspace: server.workspaceId, scopes: ['emails:read'] });
      const tokens = await tokensOf(reg, await exchange(reg, started, landed));
      assert.deepEqual(await tokenError(await exchange(reg, started, landed)), { status: 400, error: 'invalid_grant' });
      failed(
        await new Resend(tokens.access_token, { baseUrl: `${server.httpUrl}/v1` }).emails.list(),
        401,
        'invalid_api_key',
      );
    });

    it('a code lives 60 s: just under, it works; just over, invalid_grant', async () => {
      const under = await authorizationUrl(reg, 'emails:read');
      const landedUnder = await consent(dash, under, { workspace: server.workspaceId, scopes: ['emails:read'] });
      clock.advance(59_000);
      assert.equal((await exchange(reg, under, landedUnder)).status, 200);
      const over = await authorizationUrl(reg, 'emails:read');
      const landedOver = await consent(dash, over, { workspace: server.workspaceId, scopes: ['emails:read'] });
      clock.advance(61_000);
      assert.deepEqual(await tokenError(await exchange(reg, over, landedOver)), {
        status: 400,
        error: 'invalid_grant',
      });
      // Retention deletes what expired (that code among it).
      assert.ok((await runRetention({ db: server.runtime.store.db, clock, config: server.config })).oauthModels >= 1);
    });

    it('a scope the server does not offer: invalid_scope to the app', async () => {
      const started = await authorizationUrl(reg, 'emails:read admin:everything');
      const res = await dash.get(pathOf(started.url.href));
      assert.equal(res.status, 303);
      const back = new URL(res.headers.get('location')!);
      assert.equal(back.origin + back.pathname, reg.redirectUri);
      assert.equal(back.searchParams.get('error'), 'invalid_scope');
      assert.equal(back.searchParams.get('state'), started.state);
    });

    it('registration: https or loopback redirect URIs, public clients only', async () => {
      const register = (body: Record<string, unknown>) =>
        fetch(reg.as.registration_endpoint!, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      assert.deepEqual(
        await tokenError(
          await register({ redirect_uris: ['http://evil.example/cb'], token_endpoint_auth_method: 'none' }),
        ),
        { status: 400, error: 'invalid_redirect_uri' },
      );
      assert.deepEqual(
        await tokenError(
          await register({
            redirect_uris: ['https://app.example/cb'],
            token_endpoint_auth_method: 'client_secret_basic',
          }),
        ),
        { status: 400, error: 'invalid_client_metadata' },
      );
      assert.equal(
        (await register({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none' })).status,
        201,
      );
      assert.deepEqual(
        await tokenError(
          await register({
            redirect_uris: ['https://app.example/cb'],
            token_endpoint_auth_method: 'none',
            mailsvc_admin: true,
          }),
        ),
        { status: 400, error: 'invalid_client_metadata' },
      );
    });
  });
});

describe('OAuth dynamic registration is rate-limited per address', () => {
  let server: TestServer;
  before(async () => {
    server = await oauthServer();
  });
  after(async () => server?.close());

  it('20 an hour: the 20th is accepted, the 21st is 429 with Retry-After', async () => {
    const register = () =>
      fetch(`${server.httpUrl}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:1/cb'], token_endpoint_auth_method: 'none' }),
      });
    for (let i = 1; i <= 19; i++) assert.equal((await register()).status, 201, `registration ${i}`);
    assert.equal((await register()).status, 201, 'the 20th');
    const over = await register();
    assert.equal(over.status, 429);
    assert.ok(Number(over.headers.get('retry-after')) > 0);
    assert.equal(((await over.json()) as { error: string }).error, 'temporarily_unavailable');
  });
});
