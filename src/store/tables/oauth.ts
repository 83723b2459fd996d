/** The OAuth authorization server's state (migration 0120). */

/** What oidc-provider stores, one row per model instance; ids that are credentials are kept as SHA-256. */
export interface OAuthModelsTable {
  /** oidc-provider's model name: Client, AuthorizationCode, RefreshToken, AccessToken, Grant, Session, Interaction… */
  model: string;
  id: string;
  /** The model's payload as JSON, without its id when the id is a secret. */
  payload: string;
  grant_id: string | null;
  /** A session's uid (Session.findByUid). */
  uid: string | null;
  created_at: number;
  expires_at: number | null;
  /** Set once a code or a refresh token was used: a second use revokes its grant. */
  consumed_at: number | null;
}

/** A person's consent (or an operator-minted token's grant): what `oauthGrants.list` shows. */
export interface OAuthGrantsTable {
  id: string;
  workspace_id: string;
  /** oidc-provider's grant id; null for tokens minted by `mailsvc tokens create`. */
  provider_grant_id: string | null;
  /** The OAuth client's id; null for operator-minted tokens. */
  client_id: string | null;
  user_id: string | null;
  /** The client's name when the grant was made (or the token's name). */
  name: string;
  /** JSON array of the approved scopes. */
  scopes: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}
