/** The audit log (migration 0092): one row per change someone made, never updated. */

/** `user`: a dashboard user's session; `dashboard`: a session of the shared password or a CLI link. */
export const ACTOR_TYPES = ['api_key', 'user', 'dashboard', 'cli', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

export interface AuditLogTable {
  /** UUIDv7: time-ordered, the keyset cursor. */
  id: string;
  /** null: an instance-wide change (IP pools, warm-up). */
  workspace_id: string | null;
  actor_type: ActorType;
  /** The API key's id, the user's id, the shared-password session's (a hash prefix, never the cookie); null for the CLI. */
  actor_id: string | null;
  /** `<object>.<verb>`, e.g. `api_key.created`, `domain.removed`. */
  action: string;
  object_type: string;
  object_id: string | null;
  /** JSON object of what identifies the change (names, addresses), never a secret. */
  detail: string | null;
  /** The client address behind the trusted proxies (intake/http/client-address.ts); null for the CLI. */
  client_address: string | null;
  created_at: number;
}
