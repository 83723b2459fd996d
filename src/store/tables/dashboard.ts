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
}

/** A one-time login link printed by `mailsvc dashboard login`. */
export interface DashboardLoginTokensTable {
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}
