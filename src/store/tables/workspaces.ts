import type { Generated } from 'kysely';

/** The workspaces: tenants, each with its plan and sending defaults. */

export type Plan = 'starter' | 'professional' | 'enterprise';

export interface WorkspacesTable {
  id: string;
  name: string;
  plan: Plan;
  /** Custom limits (enterprise); null falls back to the plan's numbers. */
  transactional_per_second: number | null;
  marketing_per_second: number | null;
  default_from_email: string | null;
  created_at: number;
  /** An https URL of the logo shown with the name on the preference centre. */
  logo_url: Generated<string | null>;
  /** The IP pool of its mail when neither the message nor its sending domain names one (null: the default). */
  ip_pool_id: Generated<string | null>;
}
