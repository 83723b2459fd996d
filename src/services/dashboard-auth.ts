import { createHmac, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { toIso } from '../shared/clock.js';
import { safeEqual, sha256Hex } from '../shared/crypto.js';
import { AppError } from '../shared/errors.js';
import {
  deleteDashboardSession,
  deleteExpiredDashboardRows,
  findDashboardSession,
  saveDashboardSession,
  saveLoginToken,
  setDashboardSessionWorkspace,
  useLoginToken,
} from '../store/dashboard.js';
import type { ServiceDeps } from './deps.js';
import type { UserService } from './users.js';

const scrypt = promisify(scryptCallback) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export const SESSION_TTL_MS = 12 * 3600_000;
export const LOGIN_LINK_TTL_MS = 15 * 60_000;
/** Failed sign-ins a client may make within the window before it is locked out for the window. */
export const MAX_LOGIN_FAILURES = 5;
export const LOCKOUT_WINDOW_MS = 15 * 60_000;

export interface DashboardSessionInfo {
  /** SHA-256 of the cookie's secret: what the store keeps and what CSRF tokens are bound to. */
  idHash: string;
  workspaceId: string | null;
  expiresAt: number;
  /** The user signed in; null for the shared password and CLI links (the operator: an owner's rights). */
  userId: string | null;
}

export interface SignedIn {
  /** The cookie value: random, shown to the browser only. */
  secret: string;
  expiresAt: number;
}

export interface DashboardAuthService {
  readonly passwordEnabled: boolean;
  /** Whether users exist: the sign-in form asks for an address, and dashboard.password no longer works. */
  usersExist(): Promise<boolean>;
  /** A single-use sign-in link under http.publicUrl (what `mailsvc dashboard login` prints). */
  createLoginLink(): Promise<{ url: string; expires_at: string }>;
  /**
   * `client` identifies the caller for the lockout (its address). With users (services/users.ts)
   * the address and the user's password; before the first user, the shared dashboard.password.
   */
  signInWithPassword(password: string, client: string, email?: string): Promise<SignedIn>;
  /** A session for a user who just proved who they are (an accepted invitation). */
  signInUser(userId: string, client: string): Promise<SignedIn>;
  signInWithLink(token: string, client: string): Promise<SignedIn>;
  session(secret: string | undefined): Promise<DashboardSessionInfo | undefined>;
  signOut(secret: string | undefined): Promise<void>;
  switchWorkspace(session: DashboardSessionInfo, workspaceId: string): Promise<void>;
  /** The CSRF token of a session (or of a pre-sign-in cookie): an HMAC, so nothing is stored. */
  csrfToken(binding: string): string;
  checkCsrf(binding: string, token: unknown): boolean;
}

/** Failed attempts per client, in this process: enough to make guessing a password slow. */
class LoginThrottle {
  private readonly failures = new Map<string, { count: number; since: number }>();
  constructor(private readonly now: () => number) {}

  check(client: string): void {
    const entry = this.current(client);
    if (entry && entry.count >= MAX_LOGIN_FAILURES) {
      const retryAfter = Math.ceil((entry.since + LOCKOUT_WINDOW_MS - this.now()) / 1000);
      throw new AppError('rate_limited', `Too many failed sign-ins; try again in ${Math.ceil(retryAfter / 60)} minutes`, { retryAfter });
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

export function createDashboardAuthService(deps: ServiceDeps & { users: UserService }): DashboardAuthService {
  const { db, clock, config, secretKey } = deps;
  const log = deps.logger.child({ component: 'dashboard' });
  const throttle = new LoginThrottle(() => clock.now());
  // Both sides are compared as salted scrypt hashes of equal length: neither the length nor
  // the content of the configured password shows in the comparison's timing, and each guess
  // costs a scrypt.
  const salt = randomBytes(16);
  const configured = config.dashboard.password;
  let passwordHash: Promise<Buffer> | undefined;
  const hashOfConfigured = (password: string) => (passwordHash ??= scrypt(password, salt, 32));

  const newSession = async (userId: string | null = null): Promise<SignedIn> => {
    const secret = randomBytes(32).toString('base64url');
    const now = clock.now();
    const expiresAt = now + SESSION_TTL_MS;
    await deleteExpiredDashboardRows(db, now);
    await saveDashboardSession(db, { id_hash: sha256Hex(secret), workspace_id: null, created_at: now, expires_at: expiresAt, user_id: userId });
    return { secret, expiresAt };
  };

  // The client's address, never what it typed: a mistyped password is often a real one.
  const refused = (client: string, method: 'password' | 'link', message: string): AppError => {
    throttle.fail(client);
    log.warn({ client, method }, 'dashboard sign-in refused');
    return new AppError('unauthorized', message);
  };
  const checkThrottle = (client: string, method: 'password' | 'link'): void => {
    try {
      throttle.check(client);
    } catch (err) {
      log.warn({ client, method }, 'dashboard sign-in refused: too many failures from this address');
      throw err;
    }
  };
  const signedIn = (client: string, method: 'password' | 'link' | 'user' | 'invite', userId: string | null = null): Promise<SignedIn> => {
    throttle.succeed(client);
    log.info({ client, method, userId }, 'dashboard sign-in');
    return newSession(userId);
  };

  const mac = (binding: string): string => createHmac('sha256', secretKey).update(`dashboard-csrf:${binding}`).digest('base64url');

  return {
    passwordEnabled: Boolean(configured),
    usersExist: () => deps.users.any(),

    async createLoginLink() {
      const token = randomBytes(32).toString('base64url');
      const now = clock.now();
      await saveLoginToken(db, { token_hash: sha256Hex(token), created_at: now, expires_at: now + LOGIN_LINK_TTL_MS });
      return { url: `${config.http.publicUrl}/dashboard/login/${token}`, expires_at: toIso(now + LOGIN_LINK_TTL_MS) };
    },

    async signInWithPassword(password, client, email) {
      checkThrottle(client, 'password');
      // Once a user exists, people sign in as themselves; the shared password is retired.
      if (await deps.users.any()) {
        const user = email ? await deps.users.verify(email, password) : undefined;
        if (!user) throw refused(client, 'password', 'Wrong address or password');
        return signedIn(client, 'user', user.id);
      }
      if (!configured) throw new AppError('forbidden', 'Password sign-in is off (dashboard.password is not set); run `mailsvc dashboard login` for a link');
      const given = await scrypt(password.slice(0, 1024), salt, 32);
      if (!timingSafeEqual(given, await hashOfConfigured(configured))) throw refused(client, 'password', 'Wrong password');
      return signedIn(client, 'password');
    },

    async signInWithLink(token, client) {
      checkThrottle(client, 'link');
      if (!/^[A-Za-z0-9_-]{43}$/.test(token) || !(await useLoginToken(db, sha256Hex(token), clock.now()))) {
        throw refused(client, 'link', 'This sign-in link is not valid: it was already used, has expired or was mistyped. Run `mailsvc dashboard login` for a new one.');
      }
      return signedIn(client, 'link');
    },

    signInUser: (userId, client) => signedIn(client, 'invite', userId),

    async session(secret) {
      if (!secret || secret.length > 100) return undefined;
      const row = await findDashboardSession(db, sha256Hex(secret), clock.now());
      return row ? { idHash: row.id_hash, workspaceId: row.workspace_id, expiresAt: row.expires_at, userId: row.user_id } : undefined;
    },

    async signOut(secret) {
      if (secret) await deleteDashboardSession(db, sha256Hex(secret));
    },

    switchWorkspace: (session, workspaceId) => setDashboardSessionWorkspace(db, session.idHash, workspaceId),

    csrfToken: mac,
    checkCsrf: (binding, token) => typeof token === 'string' && token.length > 0 && safeEqual(mac(binding), token),
  };
}
