import type { Generated } from 'kysely';

/** What is learnt about sending domains: DMARC and TLS reports, the reputation guard's state, hourly counts. */

/** One DMARC aggregate report (RFC 7489 §7.2) about one of our domains, as a receiver sent it. */
export interface DmarcReportsTable {
  id: string;
  /** The policy domain (policy_published/domain), lower-cased. */
  domain: string;
  org_name: string;
  report_id: string;
  reporter_email: string | null;
  begin_at: number;
  end_at: number;
  /** JSON: the policy the receiver saw (p, sp, pct, adkim, aspf). */
  policy: string;
  /** Messages covered (the sum of the records' counts). */
  messages: number;
  received_at: number;
}

/** One row of a DMARC report: messages from one source IP with one evaluation. */
export interface DmarcReportRecordsTable {
  report_id: string;
  position: number;
  source_ip: string;
  count: number;
  /** none, quarantine, reject: what the receiver did. */
  disposition: string;
  /** pass or fail: DKIM and SPF as evaluated for DMARC (aligned). */
  dkim: string;
  spf: string;
  header_from: string | null;
  envelope_from: string | null;
  /** JSON: {dkim: [{domain, selector, result}], spf: [{domain, scope, result}]} (raw, unaligned results). */
  auth_results: string;
}

/** One policy's summary from a TLS report (RFC 8460) about one of our domains. */
export interface TlsReportsTable {
  id: string;
  domain: string;
  org_name: string;
  report_id: string;
  contact: string | null;
  begin_at: number;
  end_at: number;
  /** sts, tlsa or no-policy-found. */
  policy_type: string;
  successful: number;
  failed: number;
  /** JSON: [{result_type, sending_mta_ip, receiving_mx_hostname, receiving_ip, failed_session_count, failure_reason_code}]. */
  failures: string;
  received_at: number;
}

/** sending: marketing flows; warning: a rate crossed its warning threshold; paused: marketing mail is held. */
export type ReputationState = 'sending' | 'warning' | 'paused';

/** The reputation guard's view of one sending domain: its counts over the window when last evaluated. */
export interface ReputationStatesTable {
  domain_id: string;
  workspace_id: string;
  state: ReputationState;
  /** Messages the recipient's server accepted (email.sent) in the window. */
  accepted: number;
  /** Messages bounced in the window, hard and soft. */
  bounces: number;
  hard_bounces: number;
  complaints: number;
  /** Tracked marketing messages delivered in the window; of them, opened by anyone and by people. */
  tracked: Generated<number>;
  opened: Generated<number>;
  human_opened: Generated<number>;
  /** Why the state is what it is, in words. */
  reason: string | null;
  evaluated_at: number;
  changed_at: number;
  paused_at: number | null;
  /** When an operator resumed; rates count only what happened after it. */
  resumed_at: number | null;
}

/** Hourly counts (UTC hours) per workspace, sending domain ('' none) and destination class ('' all). */
export interface StatsHourlyTable {
  workspace_id: string;
  hour: number;
  domain_id: string;
  destination: string;
  metric: string;
  count: number;
  /** 1: test mail (test keys), kept apart so that live figures never include it. */
  test: number;
}
