import { validationError } from './errors.js';

const UNITS: Record<string, number> = {
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
  weeks: 604_800_000,
};

/** The longest delay or wait timeout, as Resend allows. */
export const MAX_DURATION_MS = 30 * 86_400_000;

const PART = /(\d+)\s*([a-z]+)/gy;

/**
 * The one duration parser: a duration as people write it, Resend's way: `30 minutes`,
 * `1 hour`, `3 days`, `1 week`, or parts added up (`1 day 12 hours`, `1h 30m`); a bare number
 * is seconds. Between 1 second and `max` (30 days unless said); anything else is a validation
 * error naming `field`. In milliseconds.
 */
export function parseDuration(field: string, text: string, max = MAX_DURATION_MS): number {
  const input = text
    .trim()
    .toLowerCase()
    .replace(/,|\band\b/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/^(\d+)$/, '$1s');
  let total = 0;
  let parts = 0;
  PART.lastIndex = 0;
  let at = 0;
  while (at < input.length) {
    if (input[at] === ' ') {
      at++;
      continue;
    }
    PART.lastIndex = at;
    const m = PART.exec(input);
    const unit = m ? UNITS[m[2]!] : undefined;
    if (!m || unit === undefined)
      throw validationError(
        field,
        `"${text}" is not a duration; write e.g. "30 minutes", "1 hour", "3 days" or "1 week"`,
      );
    total += Number(m[1]) * unit;
    parts++;
    at = PART.lastIndex;
  }
  if (parts === 0) throw validationError(field, 'is required, e.g. "1 day"');
  if (total < 1000) throw validationError(field, 'must be at least 1 second');
  if (total > max) throw validationError(field, `must be at most ${Math.round(max / 86_400_000)} days`);
  return total;
}
