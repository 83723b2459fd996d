import type { EmailStatus, QueueStatus } from './tables/emails.js';

/**
 * An email's status from its recipients' queue states. While any recipient is in progress the
 * email is too (sending, then deferred, then queued, then held by the reputation guard).
 * Once all are final: delivered if any recipient got it, else the most telling failure.
 */
export function aggregateStatus(states: readonly QueueStatus[], scheduled = false): EmailStatus {
  if (states.length === 0) return 'failed';
  const has = (s: QueueStatus) => states.includes(s);
  for (const s of PRECEDENCE) if (has(s)) return s === 'queued' && scheduled ? 'scheduled' : s;
  return 'failed';
}

/** The statuses an email takes from its recipients', first match wins (aggregateStatus). */
export const PRECEDENCE = [
  'sending',
  'deferred',
  'queued',
  'held',
  'delivered',
  'bounced',
  'failed',
  'suppressed',
  'cancelled',
] as const satisfies readonly QueueStatus[];
