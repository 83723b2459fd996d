import { AppError } from '../shared/errors.js';

/** Failed sign-ins a client may make within the window before it is locked out for the window. */
export const MAX_LOGIN_FAILURES = 5;
export const LOCKOUT_WINDOW_MS = 15 * 60_000;

/**
 * Failed attempts per key (a client address, a user), in this process: enough to make guessing
 * a password or a 6-digit code slow.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; since: number }>();
  constructor(
    private readonly now: () => number,
    private readonly what = 'sign-ins',
  ) {}

  check(client: string): void {
    const entry = this.current(client);
    if (entry && entry.count >= MAX_LOGIN_FAILURES) {
      const retryAfter = Math.ceil((entry.since + LOCKOUT_WINDOW_MS - this.now()) / 1000);
      throw new AppError(
        'rate_limited',
        `Too many failed ${this.what}; try again in ${Math.ceil(retryAfter / 60)} minutes`,
        { retryAfter },
      );
    }
  }

  fail(client: string): void {
    const entry = this.current(client) ?? { count: 0, since: this.now() };
    entry.count += 1;
    this.failures.set(client, entry);
    if (this.failures.size > 10_000) this.sweep();
  }

  succeed(client: string): void {
    this.failures.delete(client);
  }

  private current(client: string) {
    const entry = this.failures.get(client);
    if (entry && this.now() - entry.since >= LOCKOUT_WINDOW_MS) {
      this.failures.delete(client);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    for (const client of [...this.failures.keys()]) this.current(client);
  }
}
