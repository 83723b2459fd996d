/** Receiving routes, and the messages they took. */

/** How a route's address matches: one address, a local-part pattern (`reply+*`), or the whole domain (`*`). */
export const ROUTE_KINDS = ['address', 'pattern', 'catch_all'] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];
/** webhook: stored and `email.received` emitted; store: stored only; reject: refused at RCPT TO. */
export const ROUTE_ACTIONS = ['webhook', 'store', 'reject'] as const;
export type RouteAction = (typeof ROUTE_ACTIONS)[number];

/** Which addresses of a workspace's domain take mail; Resend's inboxes are the `address` routes. */
export interface ReceivingRoutesTable {
  id: string;
  workspace_id: string;
  domain_id: string;
  /** Lower-cased: `support`, `reply+*`, or `*` for the catch-all. */
  local_part: string;
  kind: RouteKind;
  action: RouteAction;
  name: string | null;
  /** The display name replies from this inbox would use (Resend's inbox field). */
  from_name: string | null;
  last_received_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A message taken by the inbound listener for one workspace's routes. */
export interface ReceivedEmailsTable {
  id: string;
  workspace_id: string;
  /** JSON array: the routes that took it (one per recipient, de-duplicated). */
  route_ids: string;
  /** MAIL FROM; empty for a null sender. */
  envelope_from: string;
  /** JSON array: the RCPT TO addresses of this workspace. */
  recipients: string;
  /** The From header as a display string. */
  from_header: string;
  from_address: string | null;
  /** JSON arrays of addresses. */
  to_addresses: string;
  cc_addresses: string;
  reply_to: string;
  subject: string;
  /** The Date header. */
  sent_at: number | null;
  message_id: string | null;
  in_reply_to: string | null;
  /** JSON array of Message-IDs. */
  message_references: string;
  /** JSON: SPF, DKIM, DMARC and ARC results (see receiving/routes/authenticate-message.ts). */
  authentication: string;
  /** The email we sent that this message answers, when its In-Reply-To or References name it. */
  in_reply_to_email_id: string | null;
  /** JSON array of attachment descriptions; the bytes stay in the raw message. */
  attachments: string;
  size: number;
  remote_address: string;
  helo: string | null;
  tls: number;
  created_at: number;
}

export interface ReceivedEmailContentsTable {
  email_id: string;
  /** The message exactly as received. */
  raw: Buffer;
  text: string | null;
  html: string | null;
  /** JSON array of [name, value] in message order. */
  headers: string;
}
