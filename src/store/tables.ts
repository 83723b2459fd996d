import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Typed tables. Portable column types only, so one schema serves SQLite and PostgreSQL:
 * timestamps are epoch milliseconds (bigint), JSON is text, booleans are 0/1 integers.
 * Conversions to API shapes happen in services, never in SQL.
 */

export type Plan = 'starter' | 'professional' | 'enterprise';

export interface WorkspacesTable {
  id: string;
  name: string;
  plan: Plan;
  /** Custom limits (enterprise); null falls back to the plan's numbers. */
  transactional_per_second: number | null;
  marketing_per_second: number | null;
  default_from_email: string | null;
  created_at: number;
}

export type CredentialKind = 'live' | 'test' | 'oauth';

/** API keys (sk_live_, sk_test_, master) and OAuth access tokens (oat_): secrets kept as SHA-256. */
export interface CredentialsTable {
  id: string;
  /** null for master keys, which reach every workspace. */
  workspace_id: string | null;
  kind: CredentialKind;
  master: number;
  name: string;
  /** The first characters of the secret, shown in lists to tell keys apart. */
  prefix: string;
  secret_hash: string;
  /** JSON array of scopes for OAuth tokens; null means every scope (API keys). */
  scopes: string | null;
  expires_at: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export type DomainStatus = 'pending' | 'verified';

export interface DomainsTable {
  id: string;
  workspace_id: string;
  name: string;
  status: DomainStatus;
  external_id: string | null;
  metadata: string | null;
  created_at: number;
  verified_at: number | null;
  last_checked_at: number | null;
  /** Why the last DNS check did not verify the domain, for the user to act on. */
  last_check_error: string | null;
}

/** One row per DKIM token: the token is the selector, with its own key pair. */
export interface DkimKeysTable {
  selector: string;
  domain_id: string;
  position: number;
  /** PKCS#8 PEM, encrypted with the instance secret key (see shared/crypto.ts). */
  private_key_sealed: string;
  /** Base64 of the SubjectPublicKeyInfo DER: the p= of the DKIM TXT record. */
  public_key: string;
  created_at: number;
}

export interface Database {
  workspaces: WorkspacesTable;
  credentials: CredentialsTable;
  domains: DomainsTable;
  dkim_keys: DkimKeysTable;
}

export type Workspace = Selectable<WorkspacesTable>;
export type Credential = Selectable<CredentialsTable>;
export type NewCredential = Insertable<CredentialsTable>;
export type Domain = Selectable<DomainsTable>;
export type DomainUpdate = Updateable<DomainsTable>;
export type DkimKey = Selectable<DkimKeysTable>;
export type { Generated };
