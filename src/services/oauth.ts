import { createHmac, createPrivateKey, randomBytes } from 'node:crypto';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { decryptSecret, encryptSecret, sha256Hex } from '../shared/crypto.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import { findCredentialByHash, saveCredential } from '../store/credentials.js';
import type { ListPage } from '../store/infra/list-page.js';
import {
  activeGrantIdsOfClient,
  consumeOAuthModel,
  deleteOAuthModel,
  deleteOAuthModelsOfGrant,
  findOAuthGrant,
  findOAuthGrantByProviderId,
  findListedOAuthGrant,
  findOAuthModel,
  findOAuthModelByUid,
  listOAuthGrantPage,
  listOAuthModels,
  revokeCredentialByHash,
  revokeCredentialsOfGrant,
  revokeOAuthGrant,
  saveOAuthGrant,
  upsertOAuthModel,
  type GrantFilter,
  type ListedGrant,
} from '../store/oauth.js';
import { ALL_SCOPES, displayPrefix, type Scope } from './credentials.js';
import type { ServiceDeps } from './deps.js';
import type { Role } from './users.js';

/**
 * The OAuth authorization server's use cases: the storage oidc-provider runs on (its adapter),
 * the grants people approve (listed, revoked), the clients an admin creates. The protocol itself
 * (endpoints, PKCE, code and refresh-token rules) is oidc-provider's, mounted by the HTTP intake
 * (intake/http/oauth/).
 */

/** The scopes a person may hand to an app: those their role could use in the dashboard. */
export function scopesForRole(role: Role | null): Scope[] {
  if (role === null || role === 'owner' || role === 'admin') return [...ALL_SCOPES];
  if (role === 'viewer') return ALL_SCOPES.filter((s) => s.endsWith(':read'));
  // A developer sends and edits but does not manage keys, domains or webhooks (users.ts ROLE_PERMISSIONS).
  return ALL_SCOPES.filter((s) => s !== 'full_access' && !/^(api_keys|domains|webhooks):write$/.test(s));
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Where an authorization may be sent back: https anywhere, http only to this machine (the
 * loopback redirect of native apps and CLIs, RFC 8252 §7.3); never a fragment.
 */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri.slice(0, 100)} is not a URL`;
  }
  if (url.hash !== '') return 'a redirect URI must not carry a fragment';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'redirect URIs must be https, or http on a loopback address (127.0.0.1, [::1], localhost)';
}

/** Models whose ids are credentials (codes, tokens, sessions, interactions): stored under the SHA-256 of the id. */
const CLEAR_IDS = new Set(['Client', 'Grant']);

interface ProviderPayload {
  [key: string]: unknown;
  jti?: string;
  grantId?: string;
  uid?: string;
  userCode?: string;
  consumed?: unknown;
  exp?: number;
  scope?: string;
  client_secret?: string;
}

/** What oidc-provider asks of its storage (its Adapter interface). */
interface ProviderAdapter {
  upsert(id: string, payload: ProviderPayload, expiresIn: number | undefined): Promise<void>;
  find(id: string): Promise<ProviderPayload | undefined>;
  findByUid(uid: string): Promise<ProviderPayload | undefined>;
  findByUserCode(userCode: string): Promise<ProviderPayload | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

export interface GrantView {
  object: 'oauth_grant';
  id: string;
  workspace_id: string;
  /** The OAuth client; `mailsvc-cli` for a token minted by `mailsvc tokens create` (Resend's shape has no null here). */
  client_id: string;
  user_id: string | null;
  scopes: string[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  revoked_reason: string | null;
  client: { name: string; logo_uri: string | null };
}

/** The client id grants of operator-minted tokens show. */
export const OPERATOR_CLIENT = 'mailsvc-cli';

const grantView = (g: ListedGrant): GrantView => ({
  object: 'oauth_grant',
  id: g.id,
  workspace_id: g.workspace_id,
  client_id: g.client_id ?? OPERATOR_CLIENT,
  user_id: g.user_id,
  scopes: g.scopes,
  created_at: toIso(g.created_at),
  expires_at: toIsoOrNull(g.expires_at),
  last_used_at: toIsoOrNull(g.last_used_at),
  revoked_at: toIsoOrNull(g.revoked_at),
  revoked_reason: g.revoked_at === null ? null : 'revoked',
  client: { name: g.name, logo_uri: null },
});

export interface ClientView {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  /** `none`: a public client (PKCE only); otherwise it authenticates with its secret. */
  token_endpoint_auth_method: string;
  /** `dynamic`: registered by the app itself (RFC 7591); `admin`: created by an admin. */
  registered_by: 'dynamic' | 'admin';
  created_at: string;
}

interface ApproveInput {
  providerGrantId: string;
  clientId: string;
  clientName: string;
  userId: string | null;
  workspaceId: string;
  scopes: string[];
}

export interface OAuthService {
  /** oidc-provider's storage for one of its models. */
  adapter(model: string): ProviderAdapter;
  /** Keys derived from the instance's secret key: the same on every node and across restarts. */
  providerKeys(): { cookieKeys: string[]; signingKey: Record<string, unknown> };
  /** Records a person's consent (after oidc-provider saved its grant): the grant tokens are issued under. */
  approve(input: ApproveInput): Promise<GrantView>;
  /** A page of grants (of a workspace, of a user), revoked ones too, newest first. */
  listGrants(filter: GrantFilter, page: ListPage): Promise<{ items: GrantView[]; more: boolean }>;
  /** Ends a grant of the workspace: its tokens are refused from then on (404 for anything else, or one already revoked). */
  revokeGrant(workspaceId: string, id: string): Promise<GrantView>;
  /** Marks the grant behind an oidc-provider grant revoked (refresh-token or code reuse, revocation endpoint); null when it already was. */
  endProviderGrant(providerGrantId: string): Promise<GrantView | null>;
  createClient(input: {
    name: string;
    redirectUris: string[];
    confidential: boolean;
  }): Promise<{ client: ClientView; secret: string | null }>;
  listClients(): Promise<ClientView[]>;
  /** Removes a client and ends every grant it holds. */
  removeClient(clientId: string): Promise<ClientView>;
}

const clientView = (payload: ProviderPayload, createdAt: number): ClientView => ({
  client_id: String(payload.client_id),
  client_name: typeof payload.client_name === 'string' ? payload.client_name : String(payload.client_id),
  redirect_uris: Array.isArray(payload.redirect_uris) ? payload.redirect_uris.map(String) : [],
  token_endpoint_auth_method:
    typeof payload.token_endpoint_auth_method === 'string' ? payload.token_endpoint_auth_method : 'client_secret_basic',
  registered_by: payload.mailsvc_admin === true ? 'admin' : 'dynamic',
  created_at: toIso(createdAt),
});

// The DER header of a PKCS #8 Ed25519 private key; the 32-byte seed follows.
const ED25519_PKCS8_HEADER = Buffer.from('302e020100300506032b657004220420', 'hex');

export function createOAuthService(deps: ServiceDeps): OAuthService {
  const { db, clock, secretKey } = deps;
  const derive = (purpose: string) => createHmac('sha256', secretKey).update(`oauth:${purpose}`).digest();

  const storedId = (model: string, id: string) => (CLEAR_IDS.has(model) ? id : sha256Hex(id));

  const mintAccessToken = async (secret: string, payload: ProviderPayload): Promise<void> => {
    const hash = sha256Hex(secret);
    if (await findCredentialByHash(db, hash)) return;
    const grant = payload.grantId ? await findOAuthGrantByProviderId(db, payload.grantId) : undefined;
    // Every token is issued under a consent recorded by approve(); one without is refused, not minted.
    if (!grant || grant.revoked_at !== null)
      throw new AppError('unauthorized', 'The grant behind this token was revoked');
    // A token asked with no scope carries what the person approved; otherwise what it asked of that.
    const asked = new Set((payload.scope ?? '').split(' ').filter(Boolean));
    const scopes = asked.size === 0 ? grant.scopes : grant.scopes.filter((s) => asked.has(s));
    const now = clock.now();
    await saveCredential(db, {
      id: newId(),
      workspace_id: grant.workspace_id,
      kind: 'oauth',
      master: false,
      name: grant.name,
      prefix: displayPrefix(secret, 'oauth'),
      secret_hash: hash,
      scopes,
      expires_at: payload.exp ? payload.exp * 1000 : null,
      created_at: now,
      last_used_at: null,
      revoked_at: null,
      domain_id: null,
      grant_id: grant.id,
    });
  };

  const revokeUnderProviderGrant = async (providerGrantId: string): Promise<void> => {
    const grant = await findOAuthGrantByProviderId(db, providerGrantId);
    await deleteOAuthModelsOfGrant(db, providerGrantId);
    if (grant) await revokeCredentialsOfGrant(db, grant.id, clock.now());
  };

  const adapter = (model: string): ProviderAdapter => {
    const decode = (
      row: { payload: Record<string, unknown>; consumed_at: number | null; expires_at: number | null },
      id: string,
    ): ProviderPayload | undefined => {
      if (row.expires_at !== null && row.expires_at <= clock.now()) return undefined;
      const payload: ProviderPayload = { ...row.payload };
      if (model !== 'Client') payload.jti = id;
      if (row.consumed_at !== null) payload.consumed = Math.floor(row.consumed_at / 1000);
      if (model === 'Client' && typeof payload.client_secret === 'string')
        payload.client_secret = decryptSecret(secretKey, payload.client_secret);
      return payload;
    };
    return {
      async upsert(id, payload, expiresIn) {
        if (model === 'AccessToken') await mintAccessToken(id, payload);
        const stored: ProviderPayload = { ...payload };
        // A secret is never stored in clear: ids of tokens are hashed (the row's key), a client's secret is sealed.
        if (!CLEAR_IDS.has(model)) delete stored.jti;
        if (model === 'Client' && typeof stored.client_secret === 'string')
          stored.client_secret = encryptSecret(secretKey, stored.client_secret);
        const now = clock.now();
        await upsertOAuthModel(db, {
          model,
          id: storedId(model, id),
          payload: stored,
          grant_id: typeof payload.grantId === 'string' ? payload.grantId : null,
          uid: typeof payload.uid === 'string' ? payload.uid : null,
          created_at: now,
          expires_at: expiresIn ? now + expiresIn * 1000 : null,
          consumed_at: null,
        });
      },
      async find(id) {
        const row = await findOAuthModel(db, model, storedId(model, id));
        return row && decode(row, id);
      },
      async findByUid(uid) {
        const row = await findOAuthModelByUid(db, model, uid);
        // A session's id is only kept hashed; oidc-provider reads it back from the cookie, never from here.
        return row && decode(row, row.id);
      },
      findByUserCode: async () => undefined,
      async consume(id) {
        await consumeOAuthModel(db, model, storedId(model, id), clock.now());
      },
      async destroy(id) {
        await deleteOAuthModel(db, model, storedId(model, id));
        if (model === 'AccessToken') await revokeCredentialByHash(db, sha256Hex(id), clock.now());
      },
      revokeByGrantId: revokeUnderProviderGrant,
    };
  };

  const findClient = async (clientId: string) => {
    const row = await findOAuthModel(db, 'Client', clientId);
    if (!row) throw notFound(`OAuth client ${clientId.slice(0, 100)}`);
    return row;
  };

  return {
    adapter,

    providerKeys() {
      const signing = createPrivateKey({
        key: Buffer.concat([ED25519_PKCS8_HEADER, derive('signing').subarray(0, 32)]),
        format: 'der',
        type: 'pkcs8',
      });
      return {
        cookieKeys: [derive('cookies').toString('base64url')],
        signingKey: {
          ...signing.export({ format: 'jwk' }),
          kid: sha256Hex(derive('kid').toString('hex')).slice(0, 16),
          use: 'sig',
          alg: 'EdDSA',
        },
      };
    },

    async approve(input) {
      const known = new Set<string>(ALL_SCOPES);
      const scopes = [...new Set(input.scopes)].filter((s) => known.has(s));
      if (scopes.length === 0) throw validationError('scopes', 'approve at least one scope');
      const id = newId();
      await saveOAuthGrant(db, {
        id,
        workspace_id: input.workspaceId,
        provider_grant_id: input.providerGrantId,
        client_id: input.clientId,
        user_id: input.userId,
        name: input.clientName.slice(0, 200),
        scopes,
        created_at: clock.now(),
        expires_at: null,
        revoked_at: null,
      });
      return grantView((await findListedOAuthGrant(db, id))!);
    },

    async listGrants(filter, page) {
      const { rows, more } = await listOAuthGrantPage(db, filter, page);
      return { items: rows.map(grantView), more };
    },

    async revokeGrant(workspaceId, id) {
      const found = isUuid(id) ? await findOAuthGrant(db, id.toLowerCase()) : undefined;
      if (!found || found.workspace_id !== workspaceId || found.revoked_at !== null)
        throw notFound(`OAuth grant ${id}`);
      await revokeOAuthGrant(db, found.id, clock.now());
      return grantView((await findListedOAuthGrant(db, found.id))!);
    },

    async endProviderGrant(providerGrantId) {
      const found = await findOAuthGrantByProviderId(db, providerGrantId);
      if (!found || !(await revokeOAuthGrant(db, found.id, clock.now()))) return null;
      return grantView((await findListedOAuthGrant(db, found.id))!);
    },

    async createClient(input) {
      const name = input.name.trim();
      if (name === '' || name.length > 200) throw validationError('name', 'must be 1 to 200 characters');
      if (input.redirectUris.length === 0) throw validationError('redirect_uris', 'name at least one redirect URI');
      for (const uri of input.redirectUris) {
        const problem = redirectUriProblem(uri);
        if (problem) throw validationError('redirect_uris', problem);
      }
      const clientId = `mcl_${randomBytes(16).toString('hex')}`;
      const secret = input.confidential ? `mcs_${randomBytes(32).toString('base64url')}` : null;
      const now = clock.now();
      const payload: ProviderPayload = {
        client_id: clientId,
        client_id_issued_at: Math.floor(now / 1000),
        client_name: name,
        redirect_uris: input.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: secret ? 'client_secret_basic' : 'none',
        mailsvc_admin: true,
        ...(secret ? { client_secret: encryptSecret(secretKey, secret) } : {}),
      };
      await upsertOAuthModel(db, {
        model: 'Client',
        id: clientId,
        payload,
        grant_id: null,
        uid: null,
        created_at: now,
        expires_at: null,
        consumed_at: null,
      });
      return { client: clientView(payload, now), secret };
    },

    listClients: async () =>
      (await listOAuthModels(db, 'Client')).map((row) => clientView(row.payload, row.created_at)),

    async removeClient(clientId) {
      const row = await findClient(clientId);
      for (const grantId of await activeGrantIdsOfClient(db, clientId))
        await revokeOAuthGrant(db, grantId, clock.now());
      await deleteOAuthModel(db, 'Client', clientId);
      return clientView(row.payload, row.created_at);
    },
  };
}
