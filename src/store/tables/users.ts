/** Dashboard users, their roles per workspace and their invitations (migration 0093). */

export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export interface UsersTable {
  id: string;
  /** Lower-cased. */
  email: string;
  /** `scrypt$<salt base64>$<hash base64>`. */
  password_hash: string;
  created_at: number;
}

export interface WorkspaceMembersTable {
  user_id: string;
  workspace_id: string;
  role: Role;
  created_at: number;
}

/** A one-time invitation link; the row keeps the SHA-256 of its token. */
export interface UserInvitesTable {
  token_hash: string;
  email: string;
  workspace_id: string;
  role: Role;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}
