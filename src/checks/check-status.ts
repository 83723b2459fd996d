/**
 * The one status vocabulary of every deliverability check (DESIGN.md): the API, the CLI, the
 * dashboard and `domain.updated` events all use it.
 *
 * - `ok`: nothing to do.
 * - `warning`: works, but a receiver may judge it harshly, or it will break (an expiring
 *   certificate, a monitoring-only policy, a DNS answer that could not be had).
 * - `failing`: published but wrong; receivers will refuse or junk mail because of it.
 * - `not_published`: nothing there; the check says what to publish.
 */
export type CheckStatus = 'ok' | 'warning' | 'failing' | 'not_published';

export interface PublishRecord {
  type: 'CNAME' | 'TXT' | 'MX' | 'A' | 'AAAA' | 'PTR';
  name: string;
  value: string;
}

export interface Check {
  status: CheckStatus;
  /** Whether the check must be `ok` (or `warning`) before sending: failing it exits non-zero. */
  required: boolean;
  /** What to fix, in words (or what is right). */
  message: string;
  /** The record found in DNS, as published; null when none. */
  found: string | null;
  /** The record(s) to publish to make the check pass; empty when nothing needs publishing. */
  publish: PublishRecord[];
}

/** A check that needs action: a required check not ok or warning, or any check failing. */
export const needsAction = (check: Pick<Check, 'status' | 'required'>): boolean =>
  check.status === 'failing' || (check.required && check.status === 'not_published');

/** The worst of several statuses (failing > not_published > warning > ok). */
export function worstStatus(statuses: readonly CheckStatus[]): CheckStatus {
  for (const s of ['failing', 'not_published', 'warning'] as const) if (statuses.includes(s)) return s;
  return 'ok';
}
