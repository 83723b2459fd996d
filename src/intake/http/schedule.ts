import { validationError } from '../../shared/errors.js';

const UNITS: Record<string, number> = {
  second: 1000,
  minute: 60_000,
  min: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
};
const RELATIVE = /^in\s+(\d{1,6})\s*(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)$/i;

/**
 * A schedule time as Resend takes it: an ISO 8601 date-time (`2026-12-01T09:00:00Z`) or a
 * delay in words (`in 10 minutes`, `in 2 days`). Epoch ms; null when absent.
 */
export function parseScheduledAt(value: string | null | undefined, now: number, field = 'scheduled_at'): number | null {
  if (value === undefined || value === null) return null;
  const trimmed = value.trim();
  const relative = RELATIVE.exec(trimmed);
  if (relative) {
    const unit = relative[2]!.toLowerCase().replace(/s$/, '').replace(/^sec$/, 'second').replace(/^hr$/, 'hour');
    return now + Number(relative[1]) * UNITS[unit]!;
  }
  const ms = Date.parse(trimmed);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(trimmed) || Number.isNaN(ms)) {
    throw validationError(
      field,
      'must be an ISO 8601 date-time, e.g. 2026-12-01T09:00:00Z, or a delay such as "in 10 minutes"',
    );
  }
  return ms;
}
