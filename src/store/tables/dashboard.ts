import type { Generated } from 'kysely';
/** Dashboard sign-in: sessions and one-time login links. */

/** A signed-in dashboard browser; the cookie holds the secret, the row its SHA-256. */
export interface DashboardSessionsTable {
  id_hash: string;
  /** The workspace the dashboard shows (null: the default one). */
  workspace_id: string | null;
  created_at: number;
  expires_at: number;
  /** The user signed in (null: the shared dashboard.password or a CLI link). */
  user_id: Generated<string | null>;
  /** Where the session was made: the client address behind the trusted proxies, and its User-Agent (cut to 300). */
  client_address: Generated<string | null>;
  user_agent: Generated<string | null>;
  /** The last request it made, to the minute (null: none since sign-in). */
  last_seen_at: Generated<number | null>;
}

/** A one-time login link printed by `mailsvc dashboard login`. */
export interface DashboardLoginTokensTable {
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}
