/** What the API keeps about requests: their log, idempotency keys, rate-limit windows. */

/** One authenticated API request (Resend's logs); bodies are JSON with secrets and attachment content redacted. */
export interface ApiLogsTable {
  id: string;
  workspace_id: string;
  credential_id: string | null;
  request_id: string | null;
  method: string;
  endpoint: string;
  response_status: number;
  user_agent: string | null;
  request_body: string | null;
  response_body: string | null;
  created_at: number;
}

export interface IdempotencyKeysTable {
  workspace_id: string;
  key: string;
  request_hash: string;
  state: 'in_flight' | 'done';
  response_status: number | null;
  response_body: string | null;
  created_at: number;
  /** While in flight, others get 409; past it, a crashed request's claim may be taken over. */
  locked_until: number;
}

/** One fixed window of one rate-limit key, shared by every node. */
export interface RateLimitWindowsTable {
  /** The limiter's key, including the window length. */
  key: string;
  window_start: number;
  count: number;
  /** When the window is over and the row may be deleted. */
  expires_at: number;
}
