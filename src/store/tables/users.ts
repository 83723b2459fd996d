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

/** A user's TOTP authenticator (RFC 6238); unconfirmed (`confirmed_at` null) until a first code was right. */
export interface UserTwoFactorTable {
  user_id: string;
  /** The base32 secret, sealed with the instance key (shared/crypto.ts encryptSecret). */
  secret_sealed: string;
  created_at: number;
  confirmed_at: number | null;
  /** The time step of the last code accepted: a code of that step or an earlier one is refused (replay). */
  last_step: number | null;
}

/** A one-time recovery code; the row keeps its SHA-256. */
export interface UserRecoveryCodesTable {
  user_id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

/** A workspace whose members must sign in with a second factor. */
export interface WorkspaceTwoFactorTable {
  workspace_id: string;
  required_at: number;
  required_by: string | null;
}
