import type { Generated } from 'kysely';

/** Sending domains, their DKIM keys, and claims of domains other workspaces hold. */

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
  /** JSON: the last deliverability checks (services/deliverability/domain-checks.ts); null until first run. */
  checks: string | null;
  /** The IP pool of mail from this domain when the message names none (null: the workspace's). */
  ip_pool_id: Generated<string | null>;
  /** 0/1; null: the server's tracking.opens for marketing mail, off for transactional. */
  open_tracking: number | null;
  /** 0/1; null: the server's tracking.clicks for marketing mail, off for transactional. */
  click_tracking: number | null;
  /** enforced: its mail goes over STARTTLS or not at all. */
  tls: DomainTls;
  /** The VERP return path's subdomain; null: delivery.returnPathSubdomain. */
  return_path_subdomain: string | null;
  tracking_subdomain: string | null;
}

export const DOMAIN_TLS = ['opportunistic', 'enforced'] as const;
export type DomainTls = (typeof DOMAIN_TLS)[number];

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

export const DOMAIN_CLAIM_STATUSES = [
  'pending',
  'verified',
  'completed',
  'blocked',
  'expired',
  'superseded',
  'canceled',
  'failed',
] as const;
export type DomainClaimStatus = (typeof DOMAIN_CLAIM_STATUSES)[number];
export type DomainClaimBlockedReason = 'grace_period' | 'recent_owner_activity' | 'pending_scheduled_emails';

/** A workspace's claim of a domain other workspaces hold, proved by a TXT record. */
export interface DomainClaimsTable {
  id: string;
  workspace_id: string;
  name: string;
  /** The value the claimant publishes: mailsvc-claim=<token>. */
  token: string;
  status: DomainClaimStatus;
  /** The claimant's domain once the claim completed. */
  domain_id: string | null;
  blocked_reason: DomainClaimBlockedReason | null;
  failure_reason: string | null;
  /** JSON: the domain settings to apply once it is the claimant's (tracking, return path). */
  settings: string | null;
  created_at: number;
  expires_at: number;
}
