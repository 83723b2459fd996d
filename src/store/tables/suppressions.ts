/** The suppression list. */

export type SuppressionScope = 'all' | 'marketing';

export interface SuppressionsTable {
  workspace_id: string;
  /** A lower-cased address, or `@domain` for a whole domain. */
  address: string;
  scope: SuppressionScope;
  reason: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';
  detail: string | null;
  email_id: string | null;
  created_at: number;
}
