import { randomInt } from 'node:crypto';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { safeEqual, sha256Hex } from '../shared/crypto.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  countCredentials,
  findCredential,
  findCredentialByHash,
  listCredentialPage,
  listCredentials,
  renameCredential,
  revokeCredential,
  saveCredential,
  touchCredential,
  type Credential,
  type CredentialKind,
} from '../store/credentials.js';
import { findWorkspace } from '../store/workspaces.js';
import { saveOAuthGrant } from '../store/oauth.js';
import { findDomain, findDomainByName } from '../store/domains.js';
import type { ListPage, Listed } from '../store/infra/list-page.js';
import { normalizeDomain } from '../shared/domain-name.js';
import type { ServiceDeps } from './deps.js';
import { isOneOf } from '../shared/one-of.js';

/**
 * OAuth scopes: `<resource>:read` and `<resource>:write`, or `full_access`. API keys carry
 * every scope; tokens carry the scopes they were minted with.
 */
const RESOURCES = [
  'emails',
  'templates',
  'domains',
  'subscribers',
  'audiences',
  'campaigns',
  'webhooks',
  'suppressions',
  'api_keys',
  'receiving',
  'workflows',
] as const;
type Resource = (typeof RESOURCES)[number];
/** `emails:send` only sends (Resend's sending access); `emails:write` includes it. */
export type Scope = `${Resource}:${'read' | 'write'}` | 'emails:send' | 'full_access';
export const ALL_SCOPES: readonly Scope[] = [
  'full_access',
  'emails:send',
  ...RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`] as Scope[]),
];

/** Resend's API key permissions, as scopes: every scope, or sending only. */
export const KEY_PERMISSIONS = ['full_access', 'sending_access'] as const;
type KeyPermission = (typeof KEY_PERMISSIONS)[number];
const SENDING_SCOPES: readonly Scope[] = ['emails:send'];

export type Surface = 'v1' | 'legacy';

/** Who is calling: resolved from the Authorization header, before any workspace is chosen. */
export interface Principal {
  credentialId: string;
  kind: CredentialKind;
  master: boolean;
  /** The credential's own workspace; null for master keys. */
  workspaceId: string | null;
  scopes: ReadonlySet<Scope> | 'all';
  /** A key that may send from this domain only; null: any domain of the workspace. */
  domainId: string | null;
}

export const hasScope = (principal: Principal, scope: Scope): boolean =>
  principal.scopes === 'all' ||
  principal.scopes.has('full_access') ||
  principal.scopes.has(scope) ||
  // write implies read, as users expect of a grant; writing emails includes sending them
  (scope.endsWith(':read') && principal.scopes.has(scope.replace(':read', ':write') as Scope)) ||
  (scope === 'emails:send' && principal.scopes.has('emails:write'));

export interface CredentialView {
  id: string;
  name: string;
  kind: CredentialKind;
  master: boolean;
  prefix: string;
  workspace_id: string | null;
  scopes: string[] | null;
  /** Resend's view of the scopes: an API key that only sends is `sending_access`. */
  permission: KeyPermission;
  domain_id: string | null;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}

const credentialView = (c: Credential): CredentialView => ({
  id: c.id,
  name: c.name,
  kind: c.kind,
  master: c.master,
  prefix: c.prefix,
  workspace_id: c.workspace_id,
  scopes: c.scopes,
  permission: c.kind !== 'oauth' && c.scopes !== null ? 'sending_access' : 'full_access',
  domain_id: c.domain_id,
  created_at: toIso(c.created_at),
  last_used_at: toIsoOrNull(c.last_used_at),
  expires_at: toIsoOrNull(c.expires_at),
  revoked_at: toIsoOrNull(c.revoked_at),
});

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** 43 base62 characters carry 256 bits: more than the 32 bytes of randomness asked for. */
const SECRET_CHARS = 43;
const randomBase62 = (length: number): string => Array.from({ length }, () => BASE62[randomInt(62)]).join('');

const PREFIXES: Record<CredentialKind, string> = { live: 'sk_live_', test: 'sk_test_', oauth: 'oat_' };
const DISPLAY_PREFIX_CHARS = 4;

/** A new secret of a kind: its prefix and 256 random bits (the authorization server mints `oat_` tokens with it too). */
export const newCredentialSecret = (kind: CredentialKind): string => PREFIXES[kind] + randomBase62(SECRET_CHARS);
/** What lists show of a secret to tell credentials apart. */
export const displayPrefix = (secret: string, kind: CredentialKind): string =>
  secret.slice(0, PREFIXES[kind].length + DISPLAY_PREFIX_CHARS);
/** last_used_at is written at most this often per credential, so reads stay reads. */
const TOUCH_INTERVAL_MS = 60_000;

export interface CreatedCredential {
  credential: CredentialView;
  /** The secret itself: shown once, never stored. */
  secret: string;
}

interface CreateKeyInput {
  name: string;
  workspaceId: string | null;
  test?: boolean | undefined;
  master?: boolean | undefined;
  /** `sending_access`: the key can only send email (default `full_access`). */
  permission?: KeyPermission | undefined;
  /** With `sending_access`: the one domain (id or name) the key may send from. */
  domain?: string | undefined;
}

interface CreateTokenInput {
  name: string;
  workspaceId: string;
  scopes: string[];
  expiresInSeconds: number | null;
}

export interface CredentialService {
  createKey(input: CreateKeyInput): Promise<CreatedCredential>;
  createToken(input: CreateTokenInput): Promise<CreatedCredential>;
  list(filter: {
    workspaceId?: string | undefined;
    oauth?: boolean;
    limit?: number;
    offset?: number;
  }): Promise<CredentialView[]>;
  /** A page of a workspace's API keys, newest first. */
  listPage(workspaceId: string, page: ListPage): Promise<Listed<CredentialView>>;
  rename(id: string, workspaceId: string, name: string): Promise<CredentialView>;
  count(filter: { workspaceId?: string | undefined; oauth?: boolean }): Promise<number>;
  revoke(id: string, workspaceId?: string): Promise<CredentialView>;
  /** Resolves a presented secret to a principal, or throws 401 in the surface's words. */
  authenticate(secret: string | undefined, surface: Surface): Promise<Principal>;
}

export function createCredentialService(deps: ServiceDeps): CredentialService {
  const { db, clock, logger } = deps;
  const lastTouched = new Map<string, number>();

  const validName = (name: string): string => {
    const trimmed = name.trim();
    if (trimmed === '' || trimmed.length > 200) throw validationError('name', 'must be 1 to 200 characters');
    return trimmed;
  };

  const requireWorkspace = async (workspaceId: string): Promise<void> => {
    if (!(await findWorkspace(db, workspaceId))) throw notFound(`Workspace ${workspaceId}`);
  };

  const insert = async (
    kind: CredentialKind,
    fields: {
      name: string;
      workspaceId: string | null;
      master: boolean;
      scopes: readonly string[] | null;
      expiresInSeconds: number | null;
      domainId?: string | null;
    },
  ): Promise<CreatedCredential> => {
    const secret = newCredentialSecret(kind);
    const now = clock.now();
    const id = newId();
    const row: Credential = {
      id,
      workspace_id: fields.workspaceId,
      kind,
      master: fields.master,
      name: fields.name,
      prefix: displayPrefix(secret, kind),
      secret_hash: sha256Hex(secret),
      scopes: fields.scopes === null ? null : [...fields.scopes],
      expires_at: fields.expiresInSeconds === null ? null : now + fields.expiresInSeconds * 1000,
      created_at: now,
      last_used_at: null,
      revoked_at: null,
      domain_id: fields.domainId ?? null,
      // An operator-minted token is a grant of its own (no client, no user), under the token's id.
      grant_id: kind === 'oauth' ? id : null,
    };
    if (kind === 'oauth') {
      await saveOAuthGrant(db, {
        id,
        workspace_id: fields.workspaceId!,
        provider_grant_id: null,
        client_id: null,
        user_id: null,
        name: fields.name,
        scopes: [...(fields.scopes ?? [])],
        created_at: now,
        expires_at: row.expires_at,
        revoked_at: null,
      });
    }
    await saveCredential(db, row);
    return { credential: credentialView(row), secret };
  };

  const unauthorized = (message = 'Invalid API key') => new AppError('unauthorized', message);

  return {
    async createKey(input) {
      const name = validName(input.name);
      if (input.master && input.test)
        throw validationError('master', 'a master key is a live key; it cannot also be a test key');
      if (input.master && (input.permission === 'sending_access' || input.domain !== undefined))
        throw validationError('master', 'a master key has full access; it cannot be restricted to sending');
      if (input.master)
        return insert('live', { name, workspaceId: null, master: true, scopes: null, expiresInSeconds: null });
      if (!input.workspaceId) throw validationError('workspace', 'is required for a workspace key');
      await requireWorkspace(input.workspaceId);
      const permission = input.permission ?? 'full_access';
      if (!isOneOf(KEY_PERMISSIONS, permission))
        throw validationError('permission', `must be one of ${KEY_PERMISSIONS.join(', ')}`);
      if (input.domain !== undefined && permission !== 'sending_access')
        throw validationError('domain_id', 'restricts a sending_access key; a full_access key reaches every domain');
      let domainId: string | null = null;
      if (input.domain !== undefined) {
        const domain =
          (await findDomain(db, input.workspaceId, input.domain)) ??
          (normalizeDomain(input.domain)
            ? await findDomainByName(db, input.workspaceId, normalizeDomain(input.domain)!)
            : undefined);
        if (!domain) throw validationError('domain_id', `no domain ${input.domain} in this workspace`);
        domainId = domain.id;
      }
      return insert(input.test ? 'test' : 'live', {
        name,
        workspaceId: input.workspaceId,
        master: false,
        scopes: permission === 'sending_access' ? SENDING_SCOPES : null,
        expiresInSeconds: null,
        domainId,
      });
    },

    async createToken(input) {
      const name = validName(input.name);
      await requireWorkspace(input.workspaceId);
      if (input.scopes.length === 0) throw validationError('scopes', `name at least one of: ${ALL_SCOPES.join(', ')}`);
      const unknown = input.scopes.filter((s) => !isOneOf(ALL_SCOPES, s));
      if (unknown.length > 0)
        throw validationError('scopes', `unknown scope "${unknown[0]}"; known: ${ALL_SCOPES.join(', ')}`);
      if (
        input.expiresInSeconds !== null &&
        (!Number.isInteger(input.expiresInSeconds) || input.expiresInSeconds < 1)
      ) {
        throw validationError('expires', 'must be a positive number of seconds');
      }
      return insert('oauth', {
        name,
        workspaceId: input.workspaceId,
        master: false,
        scopes: [...new Set(input.scopes)],
        expiresInSeconds: input.expiresInSeconds,
      });
    },

    list: async (filter) => (await listCredentials(db, filter)).map(credentialView),
    count: (filter) => countCredentials(db, filter),

    async listPage(workspaceId, page) {
      const filter = { workspaceId, oauth: false };
      const [{ rows, more }, total] = await Promise.all([
        listCredentialPage(db, filter, page),
        countCredentials(db, filter),
      ]);
      return { items: rows.map(credentialView), total, more };
    },

    async rename(id, workspaceId, name) {
      const found = await findCredential(db, id);
      if (!found || found.workspace_id !== workspaceId) throw notFound(`Key ${id}`);
      await renameCredential(db, id, validName(name));
      return credentialView((await findCredential(db, id))!);
    },

    async revoke(id, workspaceId) {
      const found = await findCredential(db, id);
      if (!found || (workspaceId !== undefined && found.workspace_id !== workspaceId)) throw notFound(`Key ${id}`);
      await revokeCredential(db, id, clock.now());
      return credentialView((await findCredential(db, id))!);
    },

    async authenticate(secret, surface) {
      if (!secret) throw unauthorized('Missing API key: send the header Authorization: Bearer <API_KEY>');
      const kind = (Object.keys(PREFIXES) as CredentialKind[]).find((k) => secret.startsWith(PREFIXES[k]));
      if (!kind || secret.length > 200) throw unauthorized();
      if (kind === 'oauth' && surface === 'legacy') {
        throw unauthorized(
          'OAuth access tokens are accepted on /v1 only; use an API key (sk_live_ or sk_test_) on /api/v1',
        );
      }
      const hash = sha256Hex(secret);
      const found = await deps.rows.read('credentials', hash, () => findCredentialByHash(db, hash));
      // The index finds the row by hash; the constant-time check guards the comparison itself.
      if (!found || !safeEqual(found.secret_hash, hash) || found.kind !== kind) throw unauthorized();
      const now = clock.now();
      if (found.revoked_at !== null) throw unauthorized('API key has been revoked');
      if (found.expires_at !== null && found.expires_at <= now) throw unauthorized('Access token has expired');

      const touched = lastTouched.get(found.id) ?? found.last_used_at ?? 0;
      if (now - touched >= TOUCH_INTERVAL_MS) {
        lastTouched.set(found.id, now);
        touchCredential(db, found.id, now).catch((err: unknown) =>
          logger.warn({ err, credentialId: found.id }, 'could not record key use'),
        );
      }
      return {
        credentialId: found.id,
        kind: found.kind,
        master: found.master,
        workspaceId: found.workspace_id,
        scopes: found.scopes === null ? 'all' : new Set(found.scopes as Scope[]),
        domainId: found.domain_id,
      };
    },
  };
}
