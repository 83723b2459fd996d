import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_DURATION_MS, parseDuration } from '../../../src/shared/duration.js';
import { isAppError } from '../../../src/shared/errors.js';

const refused = (text: string, message: RegExp) =>
  assert.throws(
    () => parseDuration('duration', text),
    (err: unknown) => isAppError(err) && err.field === 'duration' && message.test(err.message),
  );

describe('durations (workflow steps, key lifetimes)', () => {
  it('reads the forms people write, alone and added up', () => {
    const cases: Array<[string, number]> = [
      ['1 second', 1000],
      ['30 minutes', 30 * 60_000],
      ['1 hour', 3_600_000],
      ['12 hours', 12 * 3_600_000],
      ['1 day', 86_400_000],
      ['3 days', 3 * 86_400_000],
      ['1 week', 7 * 86_400_000],
      ['2 Weeks', 14 * 86_400_000],
      ['1 day 12 hours', 36 * 3_600_000],
      ['1h 30m', 90 * 60_000],
      ['1 hour, 30 minutes and 15 seconds', 5415_000],
      ['  45s ', 45_000],
      // A bare number is seconds (the CLI's --expires-in 3600).
      ['3600', 3_600_000],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration('duration', text), ms, text);
  });

  it('takes 1 second to 30 days, and nothing outside', () => {
    assert.equal(parseDuration('d', '30 days'), MAX_DURATION_MS);
    assert.equal(parseDuration('d', '29 days 23 hours 59 minutes 59 seconds'), MAX_DURATION_MS - 1000);
    refused('30 days 1 second', /at most 30 days/);
    refused('5 weeks', /at most 30 days/);
    refused('0 seconds', /at least 1 second/);
    refused('1 fortnight', /not a duration/);
    refused('soon', /not a duration/);
    refused('1.5 hours', /not a duration/);
    refused('-1 day', /not a duration/);
    refused('', /is required/);
  });

  it('takes another upper bound where one is given (a key lives up to years)', () => {
    assert.equal(parseDuration('expires-in', '400 days', 500 * 86_400_000), 400 * 86_400_000);
    assert.throws(() => parseDuration('expires-in', '600 days', 500 * 86_400_000), /at most 500 days/);
  });
});
