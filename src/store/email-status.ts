import type { EmailStatus, QueueStatus } from './tables/emails.js';

/**
 * An email's status from its recipients' queue states. While any recipient is in progress the
 * email is too (sending, then deferred, then queued, then held by the reputation guard).
 * Once all are final: delivered if any recipient got it, else the most telling failure.
 */
export function aggregateStatus(states: readonly QueueStatus[], scheduled = false): EmailStatus {
  if (states.length === 0) return 'failed';
  const has = (s: QueueStatus) => states.includes(s);
  if (has('sending')) return 'sending';
  if (has('deferred')) return 'deferred';
  if (has('queued')) return scheduled ? 'scheduled' : 'queued';
  if (has('held')) return 'held';
  for (const s of ['delivered', 'bounced', 'failed', 'suppressed', 'cancelled'] as const) if (has(s)) return s;
  return 'failed';
}
