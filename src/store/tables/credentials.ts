/** API keys and OAuth access tokens. */

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
  /** A key that may send only from this domain (Resend's `domain_id` restriction). */
  domain_id: string | null;
  /** The OAuth grant an access token (oat_) belongs to; null for API keys. */
  grant_id: string | null;
}
